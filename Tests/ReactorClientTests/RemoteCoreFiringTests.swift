import XCTest

@testable import ReactorClient

final class RemoteCoreFiringTests: XCTestCase {
    func testFireAndWaitReturnsTheAcknowledgedVersion() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server)
        // Fired before any connection opened: it waits for one.
        let first = try await remote.fireAndWait(event: Increment(path: "/counter"))
        XCTAssertEqual(first, 1)
        let second = try await remote.fireAndWait(json: ["type": "increment", "path": "/counter", "by": 10])
        XCTAssertEqual(second, 2)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        await fulfillment(of: [recorder.expectation(version: 2)], timeout: 5)
        XCTAssertEqual(recorder.values.last, Counters(counter: 11))
        let version3 = try await server.post(["type": "increment", "path": "/counter"])
        XCTAssertEqual(version3, 3, "versions are the server's")
    }

    func testFireCompletesWithTheVersionAndFireAndForgetLands() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        let acknowledged = expectation(description: "acknowledged")
        remote.fire(event: Increment(path: "/counter")) { result in
            guard case .success(let version) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(version, 1)
            acknowledged.fulfill()
        }
        await fulfillment(of: [acknowledged], timeout: 5)
        remote.fire(event: Increment(path: "/counter", by: 5))
        await fulfillment(of: [recorder.expectation("the counter at 6") { $0.last?.value.counter == 6 }], timeout: 5)
        XCTAssertEqual(recorder.versions.last, 2)
    }

    func testARejectedEventThrowsTheServersProblem() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0, "name": "Ayla"])])
        let remote = try remoteCore(JSON.self, at: server)
        do {
            _ = try await remote.fireAndWait(event: Increment(path: "/name"))
            XCTFail("incrementing a string was accepted")
        } catch let problem as RemoteProblem {
            XCTAssertEqual(problem.type, "/problems/event-rejected")
            XCTAssertEqual(problem.title, "Event rejected by the state")
            XCTAssertEqual(problem.status, 422)
            XCTAssertEqual(problem.detail, "cannot increment /name: it is a string, not a number")
        }
        do {
            _ = try await remote.fireAndWait(json: ["type": "frobnicate"])
            XCTFail("an unknown event type was accepted")
        } catch let problem as RemoteProblem {
            XCTAssertEqual(problem.type, "/problems/unknown-event-type")
            XCTAssertEqual(problem.status, 422)
            XCTAssertEqual(problem["knownTypes"]?.arrayValue?.contains("increment"), true)
        }
        // The state is unchanged, and the connection is fine.
        let version1 = try await remote.fireAndWait(event: Increment(path: "/counter"))
        XCTAssertEqual(version1, 1)
    }

    func testAFireWithoutAServerFailsAfterTheTimeout() async throws {
        let gone = try Reactord.start()
        gone.stop()
        var options = RemoteCoreOptions()
        options.fireTimeout = .milliseconds(300)
        options.backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(100))
        let remote = RemoteCore<JSON>(url: gone.url, options: options)
        defer { remote.close() }
        let started = ContinuousClock.now
        do {
            _ = try await remote.fireAndWait(event: Increment(path: "/counter"))
            XCTFail("fired without a server")
        } catch let error as RemoteCoreError {
            XCTAssertEqual(error, .notConnected)
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3))
        XCTAssertEqual(remote.status, .reconnecting)
    }

    func testClosingFailsWhatWaitsAndWhatComesAfter() async throws {
        let gone = try Reactord.start()
        gone.stop()
        let remote = RemoteCore<JSON>(url: gone.url)
        let failed = expectation(description: "the waiting fire failed")
        remote.fire(event: Increment(path: "/counter")) { result in
            guard case .failure(let error) = result else { return XCTFail("fired without a server") }
            XCTAssertEqual(error as? RemoteCoreError, .closed)
            failed.fulfill()
        }
        try await Task.sleep(for: .milliseconds(50))
        remote.close()
        await fulfillment(of: [failed], timeout: 5)
        XCTAssertEqual(remote.status, .closed)
        do {
            _ = try await remote.fireAndWait(event: Increment(path: "/counter"))
            XCTFail("fired after close")
        } catch let error as RemoteCoreError {
            XCTAssertEqual(error, .closed)
        }
    }
}
