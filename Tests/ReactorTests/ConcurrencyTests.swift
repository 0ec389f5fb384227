import Dispatch
import Reactor
import XCTest

final class ConcurrencyTests: XCTestCase {
    func testAsyncFireReturnsTheVersion() async throws {
        let core = Core(state: Counter())
        let first = try await core.fireAndWait(event: Add())
        let second = try await core.fireAndWait(event: Add())
        XCTAssertEqual([first, second], [1, 2])
    }

    func testFireWithCompletionReportsTheVersion() {
        let core = Core(state: Counter(), version: 41)
        let versions = Box<[UInt64]>([])
        let done = expectation(description: "completions")
        done.expectedFulfillmentCount = 2
        for _ in 0..<2 {
            core.fire(event: Add()) { result in
                if case .success(let version) = result { versions.mutate { $0.append(version) } }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(versions.value, [42, 43])
    }

    func testTheStatesStreamYieldsTheCurrentStateThenEveryLaterOneWithVersions() async throws {
        let core = Core(state: Counter())
        core.fire(event: Add())
        let states = core.states()
        for _ in 0..<5 { core.fire(event: Add()) }
        var seen: [(UInt64, Int)] = []
        for await (version, state) in states {
            seen.append((version, state.count))
            if version == 6 { break }
        }
        XCTAssertEqual(seen.map(\.0), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(seen.map(\.1), [1, 2, 3, 4, 5, 6])
    }

    func testReadingTheStateFromManyThreadsWhileFiringIsSafeAndMonotonic() {
        let core = Core(state: Counter())
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var last = -1
            for _ in 0..<300 {
                if worker.isMultiple(of: 2) {
                    core.fire(event: Add())
                } else {
                    let snapshot = core.snapshot()
                    XCTAssertEqual(Int(snapshot.version), snapshot.state.count)
                    XCTAssertGreaterThanOrEqual(snapshot.state.count, last)
                    last = snapshot.state.count
                }
            }
        }
        XCTAssertEqual(core.state.count, 600)
    }
}
