import Logging
import Reactor
@testable import ReactorServer
import XCTest

final class SubscriptionHubTests: XCTestCase {
    final class Sink: SubscriptionSink {
        var messages: [SubscriberMessage] = []
        func deliver(_ message: SubscriberMessage) { messages.append(message) }
        var decoded: [JSON] { messages.map { try! JSON(parsing: $0.json) } }
    }

    private var hub: SubscriptionHub<JSONDocument>!
    private var document = JSONDocument()
    private var version: UInt64 = 0

    override func setUp() {
        hub = SubscriptionHub(windowCapacity: 4, history: "h1", logger: Logger(label: "test")) { [unowned self] in document }
        hub.update(with: document, version: 0)
    }

    private func apply(_ event: DocumentEvent) throws {
        try document.apply(event)
        version += 1
        hub.update(with: document, version: version)
    }

    private func selection(_ path: String = "", _ mode: SubscriptionSelection.Mode = .patch) throws -> SubscriptionSelection {
        SubscriptionSelection(path: try JSONPointer(path), mode: mode)
    }

    func testASubscriberGetsASnapshotThenPatchesThatRebuildTheState() throws {
        let sink = Sink()
        let first = hub.subscribe(sink, to: try selection(), since: nil)
        XCTAssertEqual(first.map { try! JSON(parsing: $0.json) }, [["type": "snapshot", "version": 0, "state": [:], "history": "h1"]])
        var replica = try XCTUnwrap(JSON(parsing: first[0].json)["state"])
        try apply(.set(path: try JSONPointer("/a/b"), value: [1, 2]))
        try apply(.append(path: try JSONPointer("/a/b"), value: 3))
        try apply(.increment(path: try JSONPointer("/n"), by: 2))
        try apply(.remove(path: try JSONPointer("/a")))
        XCTAssertEqual(sink.decoded.map { $0["version"] }, [1, 2, 3, 4])
        for message in sink.decoded {
            XCTAssertEqual(message["type"], "patch")
            try JSONPatch.apply(JSONPatch.operations(from: message["ops"]!), to: &replica)
        }
        XCTAssertEqual(replica, document.root)
    }

    func testOneSelectionGetsTheSameMessageObjectAndOthersOnlyWhenTheirPartChanges() throws {
        let (a, b, other, whole) = (Sink(), Sink(), Sink(), Sink())
        try apply(.set(path: try JSONPointer("/x"), value: [:]))
        _ = hub.subscribe(a, to: try selection("/x"), since: nil)
        _ = hub.subscribe(b, to: try selection("/x"), since: nil)
        _ = hub.subscribe(other, to: try selection("/y"), since: nil)
        _ = hub.subscribe(whole, to: try selection("/x", .state), since: nil)
        try apply(.set(path: try JSONPointer("/x/k"), value: "v"))
        XCTAssertEqual(a.messages.count, 1)
        XCTAssertTrue(a.messages[0] === b.messages[0], "subscribers of one selection must share one encoded message")
        XCTAssertEqual(a.decoded[0]["ops"], [["op": "add", "path": "/k", "value": "v"]])
        XCTAssertEqual(other.messages.count, 0, "an unrelated change reached /y's subscriber")
        XCTAssertEqual(whole.decoded, [["type": "state", "version": 2, "state": ["k": "v"]]])
    }

    func testResumeWithinTheWindowSendsEveryMissedVersion() throws {
        for value in 1...3 { try apply(.set(path: try JSONPointer("/v"), value: .integer(Int64(value)))) }
        let sink = Sink()
        let missed = hub.subscribe(sink, to: try selection(), since: 1)
        XCTAssertEqual(missed.map { try! JSON(parsing: $0.json)["version"] }, [2, 3])
        XCTAssertTrue(hub.subscribe(Sink(), to: try selection(), since: 3).isEmpty, "an up-to-date subscriber needs nothing")
    }

    func testResumeFromAnotherHistoryIsAFreshSnapshotMarkedNotResumed() throws {
        for value in 1...3 { try apply(.set(path: try JSONPointer("/v"), value: .integer(Int64(value)))) }
        // Version 1 of a server that started over since: its patches are not this history's.
        let other = hub.subscribe(Sink(), to: try selection(), since: 1, history: "h0").map { try! JSON(parsing: $0.json) }
        XCTAssertEqual(other, [["type": "snapshot", "version": 3, "state": ["v": 3], "history": "h1", "resumed": false]])
        XCTAssertEqual(hub.subscribe(Sink(), to: try selection(), since: 3, history: "h0").count, 1, "even at the same version")
        let same = hub.subscribe(Sink(), to: try selection(), since: 1, history: "h1").map { try! JSON(parsing: $0.json)["version"] }
        XCTAssertEqual(same, [2, 3])
        XCTAssertTrue(hub.subscribe(Sink(), to: try selection(), since: 3, history: "h1").isEmpty)
    }

    func testResumeBeyondTheWindowOrFromTheFutureIsAFreshSnapshotMarkedNotResumed() throws {
        for value in 1...6 { try apply(.set(path: try JSONPointer("/v"), value: .integer(Int64(value)))) }
        for since in [UInt64(0), 1, 99] {
            let messages = hub.subscribe(Sink(), to: try selection(), since: since).map { try! JSON(parsing: $0.json) }
            XCTAssertEqual(messages, [["type": "snapshot", "version": 6, "state": ["v": 6], "history": "h1", "resumed": false]], "since \(since)")
        }
        // The window holds 4 transitions: 3..6, so since=2 is the oldest that resumes.
        XCTAssertEqual(hub.subscribe(Sink(), to: try selection(), since: 2).count, 4)
    }

    /// A cluster node that starts again from a snapshot jumps over versions: a subscriber resuming
    /// from before the jump, or from within the versions skipped, starts over; one from the jump on
    /// gets the patches after it.
    func testResumeAcrossAJumpOverVersionsStartsOverOrGetsWhatFollowsTheJump() throws {
        // A sub-tree subscriber makes the hub keep the previous state and send diffs from it: the
        // jump's diff holds from version 2 only, the window's replacement from any version.
        _ = hub.subscribe(Sink(), to: try selection("/w"), since: nil)
        for value in 1...2 { try apply(.set(path: try JSONPointer("/v"), value: .integer(Int64(value)))) }
        try document.apply(.set(path: try JSONPointer("/w"), value: "jumped"))
        version = 50
        hub.update(with: document, version: version)
        try apply(.set(path: try JSONPointer("/v"), value: 51))
        let fresh: JSON = ["type": "snapshot", "version": 51, "state": ["v": 51, "w": "jumped"], "history": "h1", "resumed": false]
        for since in [UInt64(1), 2, 8, 48] {
            let messages = hub.subscribe(Sink(), to: try selection(), since: since).map { try! JSON(parsing: $0.json) }
            XCTAssertEqual(messages, [fresh], "since \(since)")
        }
        // The jump itself is a replacement of the whole state: right from any version before it.
        let fromJump = hub.subscribe(Sink(), to: try selection(), since: 49).map { try! JSON(parsing: $0.json) }
        XCTAssertEqual(fromJump.map { $0["version"] }, [50, 51])
        XCTAssertEqual(fromJump.first?["ops"], [["op": "replace", "path": "", "value": ["v": 2, "w": "jumped"]]])
        XCTAssertEqual(hub.subscribe(Sink(), to: try selection(), since: 50).map { try! JSON(parsing: $0.json)["version"] }, [51])
        XCTAssertEqual(hub.subscribe(Sink(), to: try selection(), since: 52).map { try! JSON(parsing: $0.json) },
                       [fresh], "a version from a future this node never saw")
    }

    /// Missed patches past the subscriber's budget (its unsent bytes' bound) would wait in its
    /// output whatever the slow-consumer policy says: it starts over from a snapshot instead.
    func testResumeWhosePatchesExceedTheBudgetStartsOver() throws {
        for value in 1...3 { try apply(.set(path: try JSONPointer("/v"), value: .string(String(repeating: "x", count: 100 * value)))) }
        let all = hub.subscribe(Sink(), to: try selection(), since: 0, budget: 1_000).map { try! JSON(parsing: $0.json)["version"] }
        XCTAssertEqual(all, [1, 2, 3])
        let over = hub.subscribe(Sink(), to: try selection(), since: 0, budget: 400).map { try! JSON(parsing: $0.json) }
        XCTAssertEqual(over.count, 1)
        XCTAssertEqual(over.first?["type"], "snapshot")
        XCTAssertEqual(over.first?["resumed"], false)
        XCTAssertEqual(over.first?["version"], 3)
    }

    func testResumeOfASubTreeIsOneReplaceWhenItMayHaveChangedAndNothingOtherwise() throws {
        try apply(.set(path: try JSONPointer("/list"), value: [1, 2, 3]))
        try apply(.set(path: try JSONPointer("/other"), value: 1))
        XCTAssertTrue(hub.subscribe(Sink(), to: try selection("/list/2"), since: 1).isEmpty)
        try apply(.remove(path: try JSONPointer("/list/0")))
        let messages = hub.subscribe(Sink(), to: try selection("/list/1"), since: 2).map { try! JSON(parsing: $0.json) }
        XCTAssertEqual(messages, [["type": "patch", "version": 3, "ops": [["op": "replace", "path": "", "value": 3]]]])
    }

    func testTouchingRules() throws {
        let selection = try self.selection("/a/list/2")
        for changed in ["/a", "/a/list", "/a/list/2/x", "/a/list/0", "/a/list/-", ""] {
            XCTAssertTrue(selection.isTouched(by: try JSONPointer(changed)), changed)
        }
        for changed in ["/b", "/a/other", "/a/list2", "/a/list/3/x"] {
            XCTAssertFalse(selection.isTouched(by: try JSONPointer(changed)), changed)
        }
        XCTAssertTrue(selection.isTouched(by: .move(from: try JSONPointer("/a/list/2"), path: try JSONPointer("/b"))), "a move away")
        XCTAssertFalse(selection.isTouched(by: .copy(from: try JSONPointer("/a/list/2"), path: try JSONPointer("/b"))), "a copy from")
        XCTAssertFalse(selection.isTouched(by: .test(path: try JSONPointer("/a/list/2"), value: 1)), "a test")
    }

    func testAnUnsubscribedSinkGetsNothing() throws {
        let sink = Sink()
        let selection = try selection()
        _ = hub.subscribe(sink, to: selection, since: nil)
        hub.unsubscribe(sink, from: selection)
        try apply(.set(path: try JSONPointer("/v"), value: 1))
        XCTAssertEqual(sink.messages.count, 0)
        XCTAssertEqual(hub.subscriberCount, 0)
    }
}
