import XCTest

@testable import ReactorClient

final class RemoteCoreSubscriptionTests: XCTestCase {
    func testASubscriberGetsTheCurrentStateWhenItSubscribes() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(.game)])
        try await server.post(["type": "increment", "path": "/counter"])
        let remote = try remoteCore(Game.self, at: server)
        let early = StateRecorder<Game>()
        remote.add(subscriber: early)  // before the snapshot arrived: gets it when it does
        await fulfillment(of: [early.expectation(version: 1)], timeout: 5)

        let late = StateRecorder<Game>()
        remote.add(subscriber: late)  // after: gets the current state at once
        await fulfillment(of: [late.expectation(version: 1)], timeout: 5)
        for recorder in [early, late] {
            XCTAssertEqual(recorder.versions, [1])
            XCTAssertEqual(recorder.values.first?.counter, 1)
            XCTAssertEqual(recorder.values.first?.players.first, Player(name: "Ayla", level: 1))
        }
        XCTAssertEqual(remote.version, 1)
        XCTAssertEqual(remote.state?.counter, 1)
        XCTAssertEqual(remote.counts, { var counts = ConnectionCounts(); counts.connections = 1; counts.snapshots = 1; return counts }())
    }

    func testSubscribersGetEveryLaterStateFiredByAnotherClient() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        await fulfillment(of: [recorder.expectation(version: 0)], timeout: 5)
        for _ in 1...5 { try await server.post(["type": "increment", "path": "/counter"]) }
        await fulfillment(of: [recorder.expectation(version: 5)], timeout: 5)
        XCTAssertEqual(recorder.versions, [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(recorder.values.map(\.counter), [0, 1, 2, 3, 4, 5])
    }

    func testASubscriberWrittenForALocalCoreAndItsQueue() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server)
        let queue = DispatchQueue(label: "subscriber")
        let reachedTwo = expectation(description: "the counter reached 2")
        let subscriber = PlainSubscriber<Counters> { values in
            dispatchPrecondition(condition: .onQueue(queue))
            if values.last?.counter == 2 { reachedTwo.fulfill() }
        }
        remote.add(subscriber: subscriber, notifyOnQueue: queue)
        remote.fire(event: Increment(path: "/counter"))
        remote.fire(event: Increment(path: "/counter"))
        await fulfillment(of: [reachedTwo], timeout: 5)
        XCTAssertEqual(subscriber.values.map(\.counter), [0, 1, 2])
    }

    func testAnEquatableSelectionIsDeliveredOnlyWhenItChanges() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(.game)])
        let remote = try remoteCore(Game.self, at: server)
        let whole = StateRecorder<Game>()
        let level = StateRecorder<Int>()
        let names = StateRecorder<[String]>()
        remote.add(subscriber: whole)
        remote.add(subscriber: level, selector: { $0.players[0].level })
        remote.add(subscriber: names, selector: { $0.players.map(\.name) })
        await fulfillment(of: [whole.expectation(version: 0)], timeout: 5)
        try await server.post(["type": "increment", "path": "/counter"])  // changes neither selection
        try await server.post(["type": "increment", "path": "/players/0/level"])
        await fulfillment(of: [whole.expectation(version: 2), level.expectation(version: 2)], timeout: 5)
        XCTAssertEqual(level.updates.map(\.value), [1, 2])
        XCTAssertEqual(level.versions, [0, 2])
        XCTAssertEqual(names.versions, [0])
        XCTAssertEqual(names.values, [["Ayla", "Brom"]])
    }

    func testAPathFollowsOnlyThatSubTree() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(.game)])
        let remote = try remoteCore(Player.self, at: server, path: "/players/1")
        let player = StateRecorder<Player>()
        remote.add(subscriber: player)
        await fulfillment(of: [player.expectation(version: 0)], timeout: 5)
        try await server.post(["type": "increment", "path": "/players/0/level"])  // not ours: nothing comes
        try await server.post(["type": "set", "path": "/players/1/name", "value": "Bromwyn"])
        await fulfillment(of: [player.expectation(version: 2)], timeout: 5)
        XCTAssertEqual(player.versions, [0, 2])
        XCTAssertEqual(player.values, [Player(name: "Brom", level: 5), Player(name: "Bromwyn", level: 5)])
        XCTAssertEqual(remote.json?.value, ["name": "Bromwyn", "level": 5])
    }

    func testAStateThatDoesNotDecodeIsHeldBackUntilOneDoes() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": "none yet"])])
        let remote = try remoteCore(Counters.self, at: server)
        let recorder = StateRecorder<Counters>()
        remote.add(subscriber: recorder)
        try await waitUntil("the snapshot arrived") { remote.json != nil }
        XCTAssertNil(remote.state)
        XCTAssertNotNil(remote.decodingError)
        try await server.post(["type": "set", "path": "/counter", "value": 7])
        await fulfillment(of: [recorder.expectation(version: 1)], timeout: 5)
        XCTAssertEqual(recorder.values, [Counters(counter: 7)])
        XCTAssertNil(remote.decodingError)
    }

    func testStatesAndStatusesAsAsyncSequences() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server)
        var statuses = remote.statuses().makeAsyncIterator()
        let first = await statuses.next()
        XCTAssertTrue(first == .connecting || first?.isOpen == true, "\(String(describing: first))")
        if first == .connecting {
            let opened = await statuses.next()
            XCTAssertEqual(opened?.isOpen, true)
        }
        var states = remote.states().makeAsyncIterator()
        let initial = await states.next()
        XCTAssertEqual(initial?.version, 0)
        try await server.post(["type": "increment", "path": "/counter", "by": 41])
        let next = await states.next()
        XCTAssertEqual(next?.version, 1)
        XCTAssertEqual(next?.state.counter, 41)
        remote.close()
        let closed = await statuses.next()
        XCTAssertEqual(closed, .closed)
        let end = await statuses.next()
        XCTAssertNil(end)
        let ended = await states.next()
        XCTAssertNil(ended)
    }
}
