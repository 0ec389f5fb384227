import Dispatch
import Reactor
import XCTest

/// The seed's own two tests, ported: many subscribers and events driven concurrently.
final class SeedTests: XCTestCase {
    struct Fired: State {
        var ids: Set<Int> = []
        mutating func react(to event: Event) {
            if let event = event as? Mark { ids.insert(event.id) }
        }
    }

    struct Mark: Event { let id: Int }

    struct MarkCommand: Command {
        let id: Int
        func execute(state: Fired, core: Core<Fired>) {
            core.fire(event: Mark(id: id))
        }
    }

    final class Waiter: Subscriber, Sendable {
        let id: Int
        let expectation: XCTestExpectation
        init(id: Int, expectation: XCTestExpectation) {
            self.id = id
            self.expectation = expectation
        }
        func update(with state: Fired) {
            if state.ids.contains(id) { expectation.fulfill() }
        }
    }

    private let count = 1_000

    func testEachOfAThousandConcurrentSubscribersSeesTheStateItsOwnEventProduced() {
        let core = Core(state: Fired())
        let waiters = (0..<count).map { Waiter(id: $0, expectation: expectation(description: "subscriber \($0)")) }
        for waiter in waiters { waiter.expectation.assertForOverFulfill = false }
        DispatchQueue.concurrentPerform(iterations: count) { index in
            core.add(subscriber: waiters[index])
            core.fire(event: Mark(id: index))
        }
        // The core holds subscribers weakly: an optimised build would otherwise let the waiters go
        // as soon as their expectations are taken, and nobody would be notified.
        withExtendedLifetime(waiters) { wait(for: waiters.map(\.expectation), timeout: 60) }
        XCTAssertEqual(core.state.ids.count, count)
        XCTAssertEqual(core.version, UInt64(count))
    }

    func testTheSameDrivenByCommands() {
        let core = Core(state: Fired())
        let waiters = (0..<count).map { Waiter(id: $0, expectation: expectation(description: "subscriber \($0)")) }
        for waiter in waiters { waiter.expectation.assertForOverFulfill = false }
        DispatchQueue.concurrentPerform(iterations: count) { index in
            core.add(subscriber: waiters[index])
            core.fire(command: MarkCommand(id: index))
        }
        withExtendedLifetime(waiters) { wait(for: waiters.map(\.expectation), timeout: 60) }
        XCTAssertEqual(core.state.ids.count, count)
    }
}
