import Reactor
import XCTest

final class FeedbackTests: XCTestCase {
    func testSkippingRepeatedRunsForTheFirstStateAndEachChangeOnly() async throws {
        let core = Core(state: Counter())
        let seen = Box<[Bool]>([])
        core.add(feedback: .skippingRepeated({ $0.flag }) { flag in
            seen.mutate { $0.append(flag) }
            return flag ? Add(amount: 1) : nil
        })
        core.fire(event: SetFlag(value: true))
        core.fire(event: SetFlag(value: true))
        core.fire(event: SetName(value: "x"))
        core.fire(event: SetFlag(value: false))
        await core.settle()
        let state = await core.snapshot().state
        XCTAssertEqual(seen.value, [false, true, false])
        XCTAssertEqual(state.log, [1], "the effect's event must be fired once, for the one change to true")
    }

    func testWhenBecomesTrueRunsOnEachRisingEdge() async throws {
        let core = Core(state: Counter())
        let runs = Box(0)
        core.add(feedback: .whenBecomesTrue({ $0.count >= 2 }) { state in
            runs.mutate { $0 += 1 }
            return SetName(value: "reached \(state.count)")
        })
        for _ in 0..<3 { core.fire(event: Add()) }
        core.fire(event: Add(amount: -3))
        core.fire(event: Add(amount: 5))
        await core.settle()
        let state = await core.snapshot().state
        XCTAssertEqual(runs.value, 2)
        XCTAssertEqual(state.name, "reached 5")
    }

    func testFirstValueAfterNilIgnoresLaterValuesUntilNilAgain() async throws {
        let core = Core(state: Counter())
        let names = Box<[String]>([])
        core.add(feedback: .firstValueAfterNil({ $0.name }) { name in
            names.mutate { $0.append(name) }
            return nil
        })
        core.fire(event: SetName(value: "a"))
        core.fire(event: SetName(value: "b"))
        core.fire(event: SetName(value: nil))
        core.fire(event: SetName(value: "c"))
        _ = await core.snapshot()
        XCTAssertEqual(names.value, ["a", "c"])
    }

    func testAnAsyncEffectIsCancelledWhenTheSelectionChangesAndItsEventDropped() async throws {
        let core = Core(state: Counter())
        let cancelled = Box<[String]>([])
        let gate = AsyncGate()
        core.add(feedback: .firstValueAfterNil({ $0.name }) { name in
            // "slow" waits until released; by then the selection has changed, so it must not speak.
            if name == "slow" {
                await gate.wait()
                if Task.isCancelled { cancelled.mutate { $0.append(name) } }
            }
            return Add(amount: name == "slow" ? 1_000 : 1)
        })
        core.fire(event: SetName(value: "slow"))
        _ = await core.snapshot()
        core.fire(event: SetName(value: nil))
        core.fire(event: SetName(value: "fast"))
        let state = try await core.state(where: { $0.count >= 1 }, timeout: .seconds(10))
        await gate.open()
        // Give the released effect every chance to (wrongly) fire its event.
        try await Task.sleep(for: .milliseconds(100))
        let final = await core.snapshot().state
        XCTAssertEqual(state.count, 1)
        XCTAssertEqual(final.log, [1], "the cancelled effect's event was fired")
        XCTAssertEqual(cancelled.value, ["slow"])
    }

    func testRemovingAFeedbackStopsIt() async throws {
        let core = Core(state: Counter())
        let runs = Box(0)
        let registration = core.add(feedback: .skippingRepeated({ $0.count }) { _ in
            runs.mutate { $0 += 1 }
            return nil
        })
        core.fire(event: Add())
        core.remove(registration)
        core.fire(event: Add())
        _ = await core.snapshot()
        XCTAssertEqual(runs.value, 2)
    }
}

/// Lets a test hold an async effect until it chooses to release it.
actor AsyncGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters = []
    }
}
