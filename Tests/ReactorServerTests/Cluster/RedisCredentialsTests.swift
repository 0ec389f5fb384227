@testable import ReactorServer
import XCTest

/// The credentials of `--redis redis://[USER]:PASSWORD@HOST:PORT`: read from a URL's user
/// information, percent-decoded, sent as `AUTH`, and never shown.
final class RedisCredentialsTests: XCTestCase {
    func testAPasswordAloneIsForTheDefaultUser() throws {
        let credentials = try XCTUnwrap(RedisCredentials(userInformation: ":s3cret"))
        XCTAssertEqual(credentials, RedisCredentials(username: nil, password: "s3cret"))
        XCTAssertEqual(String(decoding: credentials.authCommand, as: UTF8.self), "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n")
    }

    func testAUserAndAPasswordAreForAnACLUser() throws {
        let credentials = try XCTUnwrap(RedisCredentials(userInformation: "alice:wonder"))
        XCTAssertEqual(credentials, RedisCredentials(username: "alice", password: "wonder"))
        XCTAssertEqual(String(decoding: credentials.authCommand, as: UTF8.self), "*3\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n$6\r\nwonder\r\n")
    }

    func testBothArePercentDecoded() throws {
        let credentials = try XCTUnwrap(RedisCredentials(userInformation: "r%C3%A9actor:a%40b%3Ac%20d%25"))
        XCTAssertEqual(credentials, RedisCredentials(username: "réactor", password: "a@b:c d%"))
    }

    func testWhatIsNotUserColonPasswordIsRefused() {
        for information in ["alice", "alice:", ":", "", ":%", ":%4", ":%zz", ":%FF"] {
            XCTAssertNil(RedisCredentials(userInformation: Substring(information)), information)
        }
    }

    func testTheDescriptionNeverShowsThePassword() {
        XCTAssertEqual(RedisCredentials(username: nil, password: "s3cret").description, "default:***")
        XCTAssertEqual(RedisCredentials(username: "alice", password: "s3cret").description, "alice:***")
        XCTAssertEqual("\(RedisCredentials(username: "alice", password: "s3cret"))".contains("s3cret"), false)
    }
}
