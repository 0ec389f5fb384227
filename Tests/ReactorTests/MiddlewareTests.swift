import Reactor
import XCTest

final class MiddlewareTests: XCTestCase {
    func testMiddlewareRunsAfterReactWithTheNewStateAndItsVersion() {
        let middleware = RecordingMiddleware()
        let core = Core(state: Counter(), middlewares: [middleware])
        core.fire(event: Add(amount: 2))
        core.fire(event: SetFlag(value: true))
        core.drain()
        let seen = middleware.seen.withLock { $0 }
        XCTAssertEqual(seen.map(\.event), ["Add", "SetFlag"])
        XCTAssertEqual(seen.map(\.count), [2, 2])
        XCTAssertEqual(seen.map(\.version), [1, 2])
    }

    func testMiddlewareCanBeAddedAndRemovedAfterInit() {
        let core = Core(state: Counter())
        let middleware = RecordingMiddleware()
        core.fire(event: Add())
        let registration = core.add(middleware: middleware)
        core.fire(event: Add())
        core.fire(event: Add())
        core.remove(registration)
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(middleware.seen.withLock { $0.map(\.version) }, [2, 3])
    }

    func testAMiddlewareWrittenAsInTheSeedWorks() {
        final class Counting: Middleware {
            let calls = Box(0)
            func process(event: Event, state: Counter) { calls.mutate { $0 += 1 } }
        }
        let middleware = Counting()
        let core = Core(state: Counter(), middlewares: [middleware])
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(middleware.calls.value, 1)
    }

    func testAMiddlewareTellsAReactionFromAnEventFiredFromOutside() async throws {
        // Records each event's amount, and whether it was applied as a reaction.
        final class ReactionWatcher: Middleware, @unchecked Sendable {  // @unchecked: called on the executor only
            var seen: [(amount: Int, isReaction: Bool)] = []
            weak var core: Core<Counter>?
            func process(event: Event, state: Counter) {
                guard let add = event as? Add else { return }
                seen.append((add.amount, core!.isApplyingReaction))
            }
        }
        let watcher = ReactionWatcher()
        let core = Core(state: Counter(), middlewares: [watcher])
        watcher.core = core
        // A feedback adding 10 when the flag is set and 100 when it is not.
        core.add(feedback: .skippingRepeated({ $0.flag }) { flag in Add(amount: flag ? 10 : 100) })
        await core.settle()
        core.fire(event: SetFlag(value: true))
        await core.settle()
        core.restore(state: Counter(), version: 0)
        await core.settle()
        core.fire(event: Add(amount: 2))
        await core.settle()
        XCTAssertEqual(watcher.seen.map(\.amount), [100, 10, 100, 2])
        XCTAssertEqual(watcher.seen.map(\.isReaction), [false, true, true, false],
                       "the feedback's first run is not shown a state change; its runs after an event and after a restore are")
    }
}

final class InterceptorTests: XCTestCase {
    struct OnlySmallAdds: Interceptor {
        let seenCounts = Box<[Int]>([])
        func intercept(event: Event, state: Counter) throws {
            seenCounts.mutate { $0.append(state.count) }
            if let add = event as? Add, add.amount > 10 { throw Refusal(reason: "too large") }
        }
    }

    func testAnInterceptorSeesTheOldStateAndCanRejectAnEventBeforeItIsApplied() async throws {
        let core = Core(state: Counter())
        let middleware = RecordingMiddleware()
        core.add(middleware: middleware)
        let interceptor = OnlySmallAdds()
        core.add(interceptor: interceptor)
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)

        let first = try await core.fireAndWait(event: Add(amount: 5))
        XCTAssertEqual(first, 1)
        do {
            _ = try await core.fireAndWait(event: Add(amount: 50))
            XCTFail("the interceptor did not reject the event")
        } catch let refusal as Refusal {
            XCTAssertEqual(refusal.reason, "too large")
        }
        let second = try await core.fireAndWait(event: Add(amount: 1))
        XCTAssertEqual(second, 2, "a rejected event must not take a version")

        let snapshot = await core.snapshot()
        XCTAssertEqual(snapshot.state.log, [5, 1])
        XCTAssertEqual(interceptor.seenCounts.value, [0, 5, 5])
        XCTAssertEqual(middleware.seen.withLock { $0.count }, 2, "middleware must not see a rejected event")
        XCTAssertEqual(recorder.values.map(\.count), [0, 5, 6], "subscribers must not see a rejected event")
    }

    func testAnEventTheStateRejectsLeavesStateAndVersionUnchanged() {
        let core = Core(state: Counter())
        core.fire(event: Add())
        let result = Box<Result<UInt64, any Error>?>(nil)
        let done = expectation(description: "completion")
        core.fire(event: Refused()) { outcome in
            result.mutate { $0 = outcome }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        guard case .failure(let error)? = result.value else { return XCTFail("the state's rejection was not reported") }
        XCTAssertEqual(error as? Refusal, Refusal(reason: "refused by the state"))
        let snapshot = core.snapshot()
        XCTAssertEqual(snapshot.version, 1)
        XCTAssertEqual(snapshot.state.count, 1)
    }

    func testRemovingAnInterceptorLetsEventsThroughAgain() async throws {
        let core = Core(state: Counter())
        let registration = core.add(interceptor: OnlySmallAdds())
        await XCTAssertThrowsErrorAsync(try await core.fireAndWait(event: Add(amount: 20)))
        core.remove(registration)
        let version = try await core.fireAndWait(event: Add(amount: 20))
        XCTAssertEqual(version, 1)
    }
}

func XCTAssertThrowsErrorAsync<T>(_ expression: @autoclosure () async throws -> T, file: StaticString = #filePath, line: UInt = #line) async {
    do {
        _ = try await expression()
        XCTFail("expected an error", file: file, line: line)
    } catch {}
}
