import Dispatch
import Logging
import Reactor
@testable import ReactorServer
import XCTest

/// The same, with the whole server around the document: without a journal, nothing the server keeps
/// (published state, subscription hub) may hold the document between events, or the core would copy
/// its root on every event. Sub-tree subscribers make the hub keep it, and then it is copied: the
/// control that the addresses show it.
final class HostedDocumentInPlaceTests: XCTestCase {
    private var loop: EventLoop!

    override func setUpWithError() throws {
        loop = try EventLoop.startThread()
    }

    override func tearDown() {
        loop.stop()
    }

    /// Root buffer addresses after each of `rounds` increments fired at a hosted document, on the loop.
    private func rootBuffers(rounds: Int, subscribeToSubtree: Bool) -> [UnsafeRawPointer?] {
        let buffers = Locked<[UnsafeRawPointer?]>([])
        let done = DispatchSemaphore(value: 0)
        let big = JSON.array((0..<10_000).map { .integer(Int64($0)) })
        loop.enqueue { [loop] in
            let server = StateServer.document(loop: loop!, state: JSONDocument(root: ["counter": 0, "big": big]),
                                              configuration: ServerConfiguration(), logger: Logger(label: "test"))
            final class Sink: SubscriptionSink { func deliver(_ message: SubscriberMessage) {} }
            let sink = Sink()
            if subscribeToSubtree {
                _ = server.subscriptionHub.subscribe(sink, to: SubscriptionSelection(path: try! JSONPointer("/counter"), mode: .patch), since: nil)
            }
            let increment = DocumentEvent.increment(path: try! JSONPointer("/counter"))
            for _ in 0..<rounds {
                _ = server.core.fireIfIdle(event: increment, origin: nil)
                let root = server.core.state.root
                buffers.withLock { $0.append(documentObjectBuffer(root)) }
            }
            XCTAssertEqual(server.core.state.root["counter"], .integer(Int64(rounds)))
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        return buffers.withLock { $0 }
    }

    func testEventsOnAHostedDocumentCopyItsRootOnlyOnce() {
        // The first event copies once: the hub keeps the initial state, not knowing yet that the
        // document records its changes.
        let buffers = rootBuffers(rounds: 50, subscribeToSubtree: false)
        XCTAssertNotNil(buffers[1])
        XCTAssertEqual(Set(buffers.dropFirst().map { $0 }).count, 1, "the root was copied after the first event")
    }

    func testASubtreeSubscriberMakesTheHubKeepTheStateAndTheAddressesShowIt() {
        let buffers = rootBuffers(rounds: 50, subscribeToSubtree: true)
        // Copies free the old buffer, so an address may come back; consecutive ones always differ.
        for (before, after) in zip(buffers, buffers.dropFirst()) {
            XCTAssertNotEqual(before, after)
        }
    }
}
