import Reactor
import XCTest

/// A command can wait for a condition on the state, with an expiry (the seed's issue #10).
final class WaitingTests: XCTestCase {
    struct WaitForFlagThenAdd: Command {
        let outcome: Box<String?>
        func execute(state: Counter, core: Core<Counter>) {
            core.wait(until: { $0.flag }, timeout: .seconds(10)) { result in
                switch result {
                case .success(let state):
                    outcome.mutate { $0 = "flag at count \(state.count)" }
                    core.fire(event: Add(amount: 100))
                case .failure(let error):
                    outcome.mutate { $0 = "\(error)" }
                }
            }
        }
    }

    func testACommandWaitsUntilTheConditionHolds() async throws {
        let core = Core(state: Counter())
        let outcome = Box<String?>(nil)
        core.fire(command: WaitForFlagThenAdd(outcome: outcome))
        core.fire(event: Add(amount: 1))
        core.fire(event: Add(amount: 2))
        core.fire(event: SetFlag(value: true))
        let state = try await core.state(where: { $0.count >= 100 }, timeout: .seconds(10))
        XCTAssertEqual(outcome.value, "flag at count 3")
        XCTAssertEqual(state.log, [1, 2, 100])
    }

    func testAWaitThatAlreadyHoldsCompletesAtOnce() async throws {
        let core = Core(state: Counter(count: 7))
        let state = try await core.state(where: { $0.count == 7 }, timeout: .milliseconds(1))
        XCTAssertEqual(state.count, 7)
    }

    func testAWaitExpires() async {
        let core = Core(state: Counter())
        let started = ContinuousClock.now
        do {
            _ = try await core.state(where: { $0.flag }, timeout: .milliseconds(100))
            XCTFail("the wait did not expire")
        } catch {
            XCTAssertEqual(error as? CoreWaitError, .timedOut)
        }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(100))
        // An expired wait is gone: a later matching state does not complete it a second time.
        core.fire(event: SetFlag(value: true))
        XCTAssertTrue(core.state.flag)
    }
}
