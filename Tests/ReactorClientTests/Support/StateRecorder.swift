import Foundation
import Synchronization
import XCTest

@testable import ReactorClient

/// A subscriber that records every state it gets, with its version, and fulfils expectations once
/// what it recorded matches.
///
/// @unchecked Sendable: `recorded` and `waits` are guarded by `lock`; XCTestExpectation is thread-safe.
final class StateRecorder<Value: Sendable>: Subscriber, @unchecked Sendable {
    typealias Update = (version: UInt64, value: Value)

    private let lock = NSLock()
    private var recorded: [Update] = []
    private var waits: [(holds: ([Update]) -> Bool, expectation: XCTestExpectation)] = []

    var updates: [Update] { lock.withLock { recorded } }
    var versions: [UInt64] { updates.map(\.version) }
    var values: [Value] { updates.map(\.value) }

    func update(with state: Value) {
        XCTFail("a remote core calls update(with:version:)")
    }

    func update(with state: Value, version: UInt64) {
        let fulfilled: [XCTestExpectation] = lock.withLock {
            recorded.append((version, state))
            let (met, unmet) = (waits.filter { $0.holds(recorded) }, waits.filter { !$0.holds(recorded) })
            waits = unmet
            return met.map(\.expectation)
        }
        for expectation in fulfilled { expectation.fulfill() }
    }

    /// Fulfilled once the updates recorded so far satisfy `holds`.
    func expectation(_ description: String, until holds: @escaping ([Update]) -> Bool) -> XCTestExpectation {
        let expectation = XCTestExpectation(description: description)
        let metAlready = lock.withLock {
            if holds(recorded) { return true }
            waits.append((holds, expectation))
            return false
        }
        if metAlready { expectation.fulfill() }
        return expectation
    }

    /// Fulfilled once a state at `version` or later was recorded.
    func expectation(version: UInt64) -> XCTestExpectation {
        expectation("a state at version \(version)") { $0.last.map { $0.version >= version } ?? false }
    }
}
