import Dispatch
import Foundation
import Reactor
import Synchronization
import XCTest

/// A core confined to one thread of its own, the way a server confines it to its event loop.
final class ThreadExecutor: CoreExecutor {
    private let jobs = Locked<[@Sendable () -> Void]>([])
    private let wakeup = DispatchSemaphore(value: 0)
    private let thread = Locked<pthread_t?>(nil)
    let enqueued = Atomic<Int>(0)

    init() {
        let started = DispatchSemaphore(value: 0)
        Thread { self.run(announcing: started) }.start()
        started.wait()
    }

    private func run(announcing started: DispatchSemaphore) {
        thread.withLock { $0 = pthread_self() }
        started.signal()
        while true {
            wakeup.wait()
            let batch = jobs.withLock { batch in defer { batch = [] }; return batch }
            for job in batch { job() }
        }
    }

    var isCurrent: Bool {
        guard let owner = thread.withLock({ $0 }) else { return false }
        return pthread_equal(owner, pthread_self()) != 0
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        enqueued.add(1, ordering: .relaxed)
        jobs.withLock { $0.append(job) }
        wakeup.signal()
    }

    /// Runs `body` on the executor's thread and waits for it, without counting as a core job.
    func sync(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        jobs.withLock { $0.append { body(); done.signal() } }
        wakeup.signal()
        done.wait()
    }
}

final class ExecutorTests: XCTestCase {
    func testOnItsOwnThreadACoreAppliesAndNotifiesInlineWithNoHop() {
        let executor = ThreadExecutor()
        let core = Core(state: Counter(), executor: executor)
        let recorder = Recorder<Counter>()
        executor.sync {
            core.add(subscriber: recorder)
            for step in 1...1_000 {
                core.fire(event: Add())
                // Applied and delivered before fire returned.
                XCTAssertEqual(core.state.count, step)
                XCTAssertEqual(recorder.values.last?.count, step)
            }
        }
        XCTAssertEqual(executor.enqueued.load(ordering: .relaxed), 0, "a job fired on the executor hopped threads")
        XCTAssertEqual(recorder.count, 1_001)
    }

    func testFiringFromOtherThreadsIsSafeAndKeepsOneOrder() {
        let executor = ThreadExecutor()
        let core = Core(state: Counter(), executor: executor)
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for _ in 0..<250 {
                if worker == 0 {
                    executor.sync { core.fire(event: Add()) }
                } else {
                    core.fire(event: Add())
                }
            }
        }
        core.drain()
        XCTAssertEqual(recorder.versions, Array(0...1_000))
        XCTAssertEqual(recorder.values.map(\.count), Array(0...1_000))
    }

    func testAJobFiredOnTheExecutorWaitsBehindOneAlreadyHandedOverFromElsewhere() {
        for executor in [ThreadExecutor() as any CoreExecutor, DispatchQueueExecutor()] {
            let core = Core(state: Counter(), executor: executor)
            let names = Recorder<String?>()
            core.add(subscriber: names, selector: { $0.name })
            core.drain()
            let onExecutor = DispatchSemaphore(value: 0)
            let body: @Sendable () -> Void = {
                // Another thread fires while the executor is busy here: that event is in transit.
                DispatchQueue.global().sync { core.fire(event: SetName(value: "remote")) }
                core.fire(event: SetName(value: "local"))
                onExecutor.signal()
            }
            if let thread = executor as? ThreadExecutor { thread.sync(body) } else { executor.enqueue(body) }
            onExecutor.wait()
            core.drain()
            XCTAssertEqual(names.values, [nil, "remote", "local"], "\(type(of: executor))")
        }
    }

    func testFireIfIdleAppliesAtOnceOnTheExecutorAndReturnsTheVersionOrTheRejection() {
        let executor = ThreadExecutor()
        let core = Core(state: Counter(), executor: executor)
        let recorder = Recorder<Counter>()
        let results = Locked<[String]>([])
        executor.sync {
            core.add(subscriber: recorder)
            for _ in 1...3 {
                switch core.fireIfIdle(event: Add(), origin: nil) {
                case .success(let version)?: results.withLock { $0.append("v\(version)") }
                case .failure(let error)?: results.withLock { $0.append("\(error)") }
                case nil: results.withLock { $0.append("queued") }
                }
            }
            if case .failure(let error)? = core.fireIfIdle(event: Refused(), origin: nil) {
                results.withLock { $0.append("\((error as? Refusal)?.reason ?? "?")") }
            }
            XCTAssertEqual(core.state.count, 3, "a refused event changes nothing")
        }
        XCTAssertEqual(results.withLock { $0 }, ["v1", "v2", "v3", "refused by the state"])
        XCTAssertEqual(recorder.versions, [0, 1, 2, 3])
        XCTAssertEqual(executor.enqueued.load(ordering: .relaxed), 0, "fireIfIdle hopped threads")
    }

    func testFireIfIdleDeclinesOffTheExecutorAndInsideAJobSoOrderIsKept() {
        let executor = ThreadExecutor()
        let core = Core(state: Counter(), executor: executor)
        XCTAssertNil(core.fireIfIdle(event: Add(), origin: nil), "another thread must wait for its turn")
        let inner = Locked<Result<UInt64, any Error>??>(nil)
        // A middleware fires while the core is running a job: that event must queue behind it.
        core.add(middleware: FiringMiddleware(core: core, inner: inner))
        executor.sync {
            _ = core.fireIfIdle(event: Add(amount: 10), origin: nil)
        }
        core.drain()
        XCTAssertEqual(inner.withLock { $0 }.map { $0 == nil }, true, "declined while a job was running")
        XCTAssertEqual(core.state.count, 10)
    }

    func testWhileOtherThreadsAreHeldTheExecutorAppliesAtOnceAndTheirEventsComeAfter() {
        let executor = ThreadExecutor()
        let core = Core(state: Counter(), executor: executor)
        let results = Locked<[UInt64?]>([])
        executor.sync {
            let fired = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                core.fire(event: Add(amount: 100))
                fired.signal()
            }
            fired.wait()
            XCTAssertNil(core.fireIfIdle(event: Add(), origin: nil), "the other thread's event came first")
            core.holdingOtherThreads {
                core.restore(state: Counter(), version: 0)
                for _ in 1...2 {
                    let version = try? core.applyIfIdle(decided: Add())?.get()
                    results.withLock { $0.append(version) }
                }
            }
        }
        core.drain()
        XCTAssertEqual(results.withLock { $0 }, [1, 2], "applied at once, on the state restored")
        XCTAssertEqual(core.state.log, [1, 1, 100], "the other thread's event after them")
    }

    func testAThreadThatFiresWithoutPauseLeavesTheExecutorItsOtherWork() {
        let executor = ThreadExecutor()
        let core = Core(state: Counter(), executor: executor)
        let chain = 5_000
        let countWhenOtherWorkRan = Locked<Int?>(nil)
        // Each event applied has another thread fire the next before the core goes on, so the
        // inbox is never empty until the chain ends; the first also gives the executor other work.
        core.add(middleware: ChainFiringMiddleware(core: core, upTo: chain) { count in
            guard count == 1 else { return }
            executor.enqueue { countWhenOtherWorkRan.withLock { $0 = core.state.count } }
        })
        core.fire(event: Add())
        let deadline = Date().addingTimeInterval(30)
        while core.snapshot().state.count < chain && Date() < deadline { usleep(10_000) }
        let (version, state) = core.snapshot()
        XCTAssertEqual(state.count, chain)
        XCTAssertEqual(version, UInt64(chain), "every event applied once")
        let ranAt = countWhenOtherWorkRan.withLock { $0 }
        XCTAssertNotNil(ranAt)
        XCTAssertLessThan(ranAt ?? chain, chain, "the executor's other work waited for the whole chain")
    }

    func testTheDefaultExecutorIsAPrivateQueueThatRecognisesItself() {
        let executor = DispatchQueueExecutor()
        XCTAssertFalse(executor.isCurrent)
        executor.queue.sync { XCTAssertTrue(executor.isCurrent) }
        DispatchQueue.main.async { XCTAssertFalse(executor.isCurrent) }
    }
}

/// Tries `fireIfIdle` from inside the core's own job, once.
private struct FiringMiddleware: Middleware {
    let core: Core<Counter>
    let inner: Locked<Result<UInt64, any Error>??>

    func process(event: Event, state: Counter) {
        guard (event as? Add)?.amount == 10 else { return }
        let result = core.fireIfIdle(event: Add(amount: 1), origin: nil)
        inner.withLock { $0 = .some(result) }
    }
}

/// Has another thread fire the next `Add` as each one is applied, until the count reaches `limit`,
/// and waits until that event is in the core's inbox; tells `onEach` the count it saw.
private struct ChainFiringMiddleware: Middleware {
    let core: Core<Counter>
    let upTo: Int
    let onEach: @Sendable (Int) -> Void

    init(core: Core<Counter>, upTo limit: Int, onEach: @escaping @Sendable (Int) -> Void) {
        self.core = core
        self.upTo = limit
        self.onEach = onEach
    }

    func process(event: Event, state: Counter) {
        onEach(state.count)
        guard state.count < upTo else { return }
        let inInbox = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { [core] in
            core.fire(event: Add())
            inInbox.signal()
        }
        inInbox.wait()
    }
}
