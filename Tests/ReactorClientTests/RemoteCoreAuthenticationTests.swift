import XCTest

@testable import ReactorClient

final class RemoteCoreAuthenticationTests: XCTestCase {
    private let tokens = ["--token", "app:s3cret:read+fire", "--token", "viewer:v1ew:read"]

    func testWithoutATokenTheSubscriptionIsRefusedWithTheProblem() async throws {
        let server = try startReactord(arguments: tokens)
        for token in [nil, "wrong"] {
            let remote = try remoteCore(JSON.self, at: server, token: token)
            try await waitUntil("refused") { remote.status.isFinal }
            guard case .refused(let problem) = remote.status else { return XCTFail("\(remote.status)") }
            XCTAssertEqual(problem.status, 401)
            XCTAssertEqual(problem.type, "/problems/unauthorized")
            do {
                _ = try await remote.fireAndWait(event: Increment(path: "/counter"))
                XCTFail("fired without a valid token")
            } catch let refusal as RemoteProblem {
                XCTAssertEqual(refusal, problem)
            }
            XCTAssertNil(remote.state)
        }
    }

    func testAWorkingTokenSubscribesAndFires() async throws {
        let server = try startReactord(arguments: tokens)
        let remote = try remoteCore(JSON.self, at: server, token: "s3cret")
        let recorder = StateRecorder<JSON>()
        remote.add(subscriber: recorder)
        let version1 = try await remote.fireAndWait(event: Increment(path: "/counter"))
        XCTAssertEqual(version1, 1)
        await fulfillment(of: [recorder.expectation(version: 1)], timeout: 5)
        XCTAssertEqual(recorder.values.last, ["counter": 1])
    }

    func testATokenWithoutTheFireScopeReadsButCannotFire() async throws {
        let server = try startReactord(arguments: tokens)
        let remote = try remoteCore(JSON.self, at: server, token: "v1ew")
        try await waitUntil("open") { remote.status.isOpen }
        do {
            _ = try await remote.fireAndWait(event: Increment(path: "/counter"))
            XCTFail("fired with a read-only token")
        } catch let problem as RemoteProblem {
            XCTAssertEqual(problem.status, 403)
            XCTAssertEqual(problem.type, "/problems/forbidden")
        }
        XCTAssertTrue(remote.status.isOpen, "a refused fire leaves the subscription as it was")
    }
}
