@testable import ReactorServer
import XCTest

final class LoopbackHostTests: XCTestCase {
    func testLoopbackNamesAndAddressesWithOrWithoutAPort() {
        for host in ["localhost", "LOCALHOST", "localhost.", "localhost:8080", "app.localhost", "a.b.Localhost:1",
                     "127.0.0.1", "127.255.255.255:80", "127.1.2.3", "[::1]", "[::1]:7070"] {
            XCTAssertTrue(LoopbackHostMiddleware.isLoopback(host: Array(host.utf8)), host)
        }
    }

    func testEverythingElseIsNot() {
        for host in ["", "example.com", "evil-localhost", "localhost.evil.com", "xlocalhost", "128.0.0.1", "127.0.0",
                     "127.0.0.1.5", "127.0.0.256", "127..0.1", "127.0.0.1x", "[::2]", "[::1", "::1", "0.0.0.0", "10.0.0.1:80"] {
            XCTAssertFalse(LoopbackHostMiddleware.isLoopback(host: Array(host.utf8)), host)
        }
    }
}
