import XCTest

@testable import ReactorClient

final class RemoteCoreReconnectionTests: XCTestCase {
    /// Restarts reactord in place (same port, same data directory, so versions continue) twice: once
    /// with nothing missed, once with events fired while the client was away. The client resumes from
    /// its version both times, without another snapshot, and its subscriber sees every version.
    func testResumesAfterTheServerRestartsWithoutASnapshotGap() async throws {
        let data = try temporaryDirectory().path
        let first = try startReactord(arguments: ["--data-dir", data])
        try await first.post(["type": "increment", "path": "/counter"])
        try await first.post(["type": "increment", "path": "/counter"])
        let remote = try remoteCore(Counters.self, at: first)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        await fulfillment(of: [recorder.expectation(version: 2)], timeout: 5)

        XCTAssertEqual(first.stop(), 0, "reactord exits cleanly on SIGTERM")
        try await waitUntil("reconnecting") { remote.status == .reconnecting }
        let second = try startReactord(port: first.port, arguments: ["--data-dir", data])
        try await waitUntil("open again") { remote.status.isOpen }
        XCTAssertEqual(remote.counts.connections, 2)
        XCTAssertEqual(remote.counts.snapshots, 1, "resumed at the server's own version: nothing to send")
        let version3 = try await second.post(["type": "increment", "path": "/counter"])
        XCTAssertEqual(version3, 3)
        await fulfillment(of: [recorder.expectation(version: 3)], timeout: 5)

        second.stop()
        try await waitUntil("reconnecting") { remote.status == .reconnecting }
        let third = try startReactord(port: first.port, arguments: ["--data-dir", data])
        let version4 = try await third.post(["type": "increment", "path": "/counter"])
        XCTAssertEqual(version4, 4)
        let version5 = try await third.post(["type": "increment", "path": "/counter"])
        XCTAssertEqual(version5, 5)
        await fulfillment(of: [recorder.expectation(version: 5)], timeout: 5)
        XCTAssertEqual(recorder.versions, [2, 3, 4, 5])
        XCTAssertEqual(recorder.values.map(\.counter), [2, 3, 4, 5])
        XCTAssertEqual(remote.counts.snapshots, 1, "the missed versions came as patches")
        let version6 = try await remote.fireAndWait(event: Increment(path: "/counter"))
        XCTAssertEqual(version6, 6)
    }

    /// A server that comes back without the versions the client saw (no data directory) answers the
    /// resume with a snapshot, which replaces the local state even at a lower version.
    func testTakesTheSnapshotOfAServerThatLostItsVersions() async throws {
        let first = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: first)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        await fulfillment(of: [recorder.expectation(version: 0)], timeout: 5)
        for _ in 1...3 { try await first.post(["type": "increment", "path": "/counter"]) }
        await fulfillment(of: [recorder.expectation(version: 3)], timeout: 5)
        first.stop()
        let second = try startReactord(port: first.port, arguments: ["--initial-state", try initialStateFile(["counter": 100])])
        await fulfillment(of: [recorder.expectation("the new server's snapshot") { $0.last?.value.counter == 100 }], timeout: 5)
        XCTAssertEqual(recorder.versions, [0, 1, 2, 3, 0])
        XCTAssertEqual(remote.counts.snapshots, 2)
        try await second.post(["type": "increment", "path": "/counter"])
        await fulfillment(of: [recorder.expectation("the new server's next state") { $0.last?.value.counter == 101 }], timeout: 5)
        XCTAssertEqual(recorder.versions.last, 1)
    }

    /// A patch that does not apply means the local copy and the server's disagree: resuming would
    /// replay it, so the remote core starts over from a snapshot instead.
    func testAPatchThatDoesNotApplyStartsOverFromASnapshot() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        await fulfillment(of: [recorder.expectation(version: 0)], timeout: 5)
        // What a server whose state went another way would send: a change to a member we do not have.
        let diverging = #"{"type":"patch","version":1,"ops":[{"op":"remove","path":"/missing"}]}"#
        remote.queue.sync { remote.handle(.message(diverging), generation: remote.generation) }
        try await waitUntil("a fresh snapshot") { remote.counts.snapshots == 2 && remote.status.isOpen }
        XCTAssertEqual(remote.json?.version, 0)
        try await server.post(["type": "increment", "path": "/counter"])
        await fulfillment(of: [recorder.expectation(version: 1)], timeout: 5)
        XCTAssertEqual(recorder.versions, [0, 1], "the same snapshot again is no news to subscribers")
        XCTAssertEqual(recorder.values.last, Counters(counter: 1))
    }

    /// reactord sends a heartbeat after 15 s without output; a stream silent for longer than the idle
    /// timeout died quietly, so it is reopened, and resumes without a snapshot. A busy one is kept.
    func testAStreamSilentPastItsIdleTimeoutIsReopened() async throws {
        let server = try startReactord()
        let remote = try remoteCore(JSON.self, at: server) {
            $0.transport = .serverSentEvents
            $0.streamIdleTimeout = .milliseconds(500)
        }
        try await waitUntil("open") { remote.status.isOpen }
        for _ in 0..<8 {
            try await server.post(["type": "increment", "path": "/n"])
            try await Task.sleep(for: .milliseconds(150))
        }
        XCTAssertEqual(remote.counts.connections, 1, "a stream with traffic is not idle")
        try await waitUntil("reopened", timeout: 3) { remote.counts.connections >= 2 && remote.status.isOpen }
        XCTAssertEqual(remote.counts.snapshots, 1)
        XCTAssertEqual(remote.json?.value, ["n": 8])
    }
}
