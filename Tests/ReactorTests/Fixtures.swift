import Dispatch
import Foundation
import Reactor
import Synchronization
import XCTest

struct Counter: State, Equatable {
    var count = 0
    var log: [Int] = []
    var flag = false
    var name: String?

    mutating func react(to event: Event) {
        try? apply(event)
    }

    mutating func apply(_ event: Event) throws {
        switch event {
        case let event as Add:
            count += event.amount
            log.append(event.amount)
        case let event as SetFlag:
            flag = event.value
        case let event as SetName:
            name = event.value
        case is Refused:
            throw Refusal(reason: "refused by the state")
        default:
            break
        }
    }
}

struct Add: Event { var amount = 1 }
struct SetFlag: Event { var value: Bool }
struct SetName: Event { var value: String? }
struct Refused: Event {}
struct Refusal: Error, Equatable { var reason: String }

/// Records what it is given; thread-safe so tests can read it from anywhere.
final class Recorder<Value: Sendable>: Subscriber, Sendable {
    private let received = Locked<[(version: UInt64, value: Value)]>([])
    let onUpdate: @Sendable (Recorder<Value>, Value, UInt64) -> Void

    init(onUpdate: @escaping @Sendable (Recorder<Value>, Value, UInt64) -> Void = { _, _, _ in }) {
        self.onUpdate = onUpdate
    }

    func update(with state: Value) {
        XCTFail("the core must call update(with:version:)")
    }

    func update(with state: Value, version: UInt64) {
        received.withLock { $0.append((version, state)) }
        onUpdate(self, state, version)
    }

    var values: [Value] { received.withLock { $0.map(\.value) } }
    var versions: [UInt64] { received.withLock { $0.map(\.version) } }
    var count: Int { received.withLock { $0.count } }
}

/// A subscriber written as in the seed: only `update(with:)`.
final class SeedStyleSubscriber: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: `states` is guarded by `lock`.
    private let lock = NSLock()
    private var states: [Counter] = []
    func update(with state: Counter) { lock.withLock { states.append(state) } }
    var received: [Counter] { lock.withLock { states } }
}

final class RecordingMiddleware: Middleware {
    let seen = Locked<[(event: String, count: Int, version: UInt64)]>([])
    let onProcess: @Sendable (Event, Counter) -> Void

    init(onProcess: @escaping @Sendable (Event, Counter) -> Void = { _, _ in }) {
        self.onProcess = onProcess
    }

    func process(event: Event, state: Counter) {
        XCTFail("the core must call process(event:state:version:)")
    }

    func process(event: Event, state: Counter, version: UInt64) {
        seen.withLock { $0.append(("\(type(of: event))", state.count, version)) }
        onProcess(event, state)
    }
}

/// Holds what a test must see in `seen`, readable after the core drained.
final class Box<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    init(_ value: Value) { storage = Locked(value) }
    var value: Value { storage.withLock { $0 } }
    func mutate<R>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

extension Core {
    /// Waits until every job submitted before this call has run, and then every job those submitted.
    func drain() {
        _ = snapshot()
        _ = snapshot()
    }

    /// Waits until every job submitted before this call has run, and then every job those submitted.
    func settle() async {
        _ = await snapshot()
        _ = await snapshot()
    }
}
