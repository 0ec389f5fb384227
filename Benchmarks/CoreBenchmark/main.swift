// Events per second through Core.fire(event:), against a bare loop calling react(to:) on the same
// state, so the core's own overhead shows as a ratio. Run: make bench-core (a release build).
import Dispatch
import Foundation
import Reactor

struct Scoreboard: State {
    var total = 0
    var events = 0
    mutating func react(to event: Event) {
        if let event = event as? Score {
            total &+= event.points
            events += 1
        }
    }
}

struct Score: Event { let points: Int }

final class Watcher: Subscriber {
    var seen = 0
    func update(with state: Scoreboard) { seen &+= state.total }
}

/// Counts the states it is given, on its own queue, checking they come in order.
/// @unchecked Sendable: `seen` and `last` are touched on the watcher's serial queue only (and read
/// after a `sync` on it).
final class QueueWatcher: Subscriber, @unchecked Sendable {
    var seen = 0
    var last: UInt64 = 0
    func update(with state: Scoreboard) {}
    func update(with state: Scoreboard, version: UInt64) {
        precondition(seen == 0 || version == last + 1, "states out of order")
        last = version
        seen += 1
    }
}

struct Counting: Middleware {
    func process(event: Event, state: Scoreboard) {
        if state.events < 0 { print("never") }
    }
}

/// Confines a core to the calling thread, as reactord confines its core to the loop thread.
final class CallingThreadExecutor: CoreExecutor {
    var isCurrent: Bool { true }
    func enqueue(_ job: @escaping @Sendable () -> Void) { job() }
}

let eventCount = Int(ProcessInfo.processInfo.environment["EVENTS"] ?? "") ?? 1_000_000
let runs = Int(ProcessInfo.processInfo.environment["RUNS"] ?? "") ?? 5

func seconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func bareLoop() -> Double {
    var state = Scoreboard()
    let events: [any Event] = [Score(points: 1), Score(points: 2)]
    let time = seconds {
        for index in 0..<eventCount { state.react(to: events[index & 1]) }
    }
    precondition(state.events == eventCount)
    return Double(eventCount) / time
}

func core(subscribers: Int, onExecutor: Bool) -> Double {
    let executor: any CoreExecutor = onExecutor ? CallingThreadExecutor() : DispatchQueueExecutor()
    let core = Core(state: Scoreboard(), middlewares: [Counting()], executor: executor)
    let watchers = (0..<subscribers).map { _ in Watcher() }
    for watcher in watchers { core.add(subscriber: watcher) }
    let events: [any Event] = [Score(points: 1), Score(points: 2)]
    let time = seconds {
        for index in 0..<eventCount { core.fire(event: events[index & 1]) }
        _ = core.snapshot()
    }
    precondition(core.version == UInt64(eventCount))
    withExtendedLifetime(watchers) {}
    return Double(eventCount) / time
}

/// Fired from this thread at a core on its default executor, each subscriber on a serial queue of
/// its own (`notifyOnQueue:`, as the seed's README does): until every subscriber has every state.
func coreWithQueuedSubscribers(_ subscribers: Int) -> Double {
    let core = Core(state: Scoreboard(), middlewares: [Counting()])
    let queues = (0..<subscribers).map { DispatchQueue(label: "watcher.\($0)") }
    let watchers = (0..<subscribers).map { _ in QueueWatcher() }
    for (watcher, queue) in zip(watchers, queues) { core.add(subscriber: watcher, notifyOnQueue: queue) }
    let events: [any Event] = [Score(points: 1), Score(points: 2)]
    let time = seconds {
        for index in 0..<eventCount { core.fire(event: events[index & 1]) }
        _ = core.snapshot()
        for queue in queues { queue.sync {} }
    }
    for (watcher, queue) in zip(watchers, queues) {
        queue.sync { precondition(watcher.seen == eventCount + 1 && watcher.last == UInt64(eventCount), "every state, in order") }
    }
    return Double(eventCount) / time
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

struct Case {
    let name: String
    let measure: () -> Double
}

let allCases = [
    Case(name: "bare loop: react(to:)") { bareLoop() },
] + [true, false].flatMap { onExecutor in
    [0, 1, 10].map { subscribers in
        Case(name: "fire, \(onExecutor ? "on the executor" : "from another thread"), \(subscribers) subscriber\(subscribers == 1 ? "" : "s"), 1 middleware") {
            core(subscribers: subscribers, onExecutor: onExecutor)
        }
    }
} + [1, 10].map { subscribers in
    Case(name: "fire from another thread, \(subscribers) subscriber\(subscribers == 1 ? "" : "s") on its own queue, 1 middleware") {
        coreWithQueuedSubscribers(subscribers)
    }
}

// CASES (a substring of the names) keeps the bare loop and the cases it names, for a profiler.
let only = ProcessInfo.processInfo.environment["CASES"] ?? ""
let cases = only.isEmpty ? allCases : [allCases[0]] + allCases.dropFirst().filter { $0.name.contains(only) }

// Interleave the cases run by run, so that a noisy moment hits them all alike.
var samples = Array(repeating: [Double](), count: cases.count)
for _ in 0..<runs {
    for (index, benchmark) in cases.enumerated() { samples[index].append(benchmark.measure()) }
}

let baseline = median(samples[0])
print("Reactor core: \(eventCount) events per run, median of \(runs) runs")
print("| case | events/s | ns/event | × bare loop |")
print("|---|---:|---:|---:|")
for (index, benchmark) in cases.enumerated() {
    let rate = median(samples[index])
    print("| \(benchmark.name) | \(String(format: "%.2f M", rate / 1e6)) | \(String(format: "%.0f", 1e9 / rate)) | \(String(format: "%.3f", rate / baseline)) |")
}
