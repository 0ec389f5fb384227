import CUV
import Foundation

struct BenchOptions {
    var port: Int
    var subscribers: Int
    var events: Int
    var serverPID: Int32?
    var timeout: Double
    var connectWindow: Int
    var window: Int
    var settle: Double
    var path: String
    var realistic: Bool
    var deflate: Bool

    /// The body of the `index`th event fired.
    func eventBody(_ index: Int) -> String {
        guard realistic else { return "{\"type\":\"increment\",\"path\":\"\(path)\",\"by\":1}" }
        let value = "{\"name\":\"Player \(index % 16)\",\"score\":\(1_000_000 + index),\"level\":\(index % 50),\"team\":\"\(index % 2 == 0 ? "red" : "blue")\","
            + "\"position\":{\"x\":\(index % 640),\"y\":\(index % 480),\"z\":0},\"inventory\":[\"sword\",\"shield\",\"potion of healing\",\"map\"],"
            + "\"status\":\"exploring the northern caves\",\"lastSeen\":\"2026-11-26T06:00:\(String(format: "%02d", index % 60))Z\",\"guild\":\"The Order of the Reactor\"}"
        return "{\"type\":\"set\",\"path\":\"\(path)/p\(index % 16)\",\"value\":\(value)}"
    }
}

/// The run: connect subscribers, let them settle, fire events, check and report. All on one libuv
/// loop, on the calling thread.
final class Bench {
    enum MessageKind { case snapshot, patch, other }
    enum Phase { case connecting, settling, firing, done }

    let options: BenchOptions
    let loop: UnsafeMutablePointer<uv_loop_t>
    /// Every socket reads into this one buffer: reads are handled synchronously.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    private let timeoutTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private let settleTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var phase = Phase.connecting
    private var exitStatus: Int32 = 0

    // Connecting.
    private var subscribers: [Subscriber] = []
    private var started = 0
    private var inHandshake = 0
    private var ready = 0
    private var failed = 0
    private var firstFailure: String?
    private var connectStart: UInt64 = 0
    private var connectEnd: UInt64 = 0

    // Firing. Versions are tracked relative to `base`, the version of the snapshots.
    private var firer: EventFirer!
    private var base: UInt64 = 0
    /// Subscribers that have not yet got version base + i, for i in 1...events.
    private var remaining: [Int32] = []
    private var completedAt: [UInt64] = []
    private var completed = 0
    private var sent = 0
    private var answered = 0
    private var sentAt: [UInt64] = []
    private var versionSentAt: [UInt64] = []
    private var firingStart: UInt64 = 0
    private var firingEnd: UInt64 = 0

    // Checks.
    private var violations = 0
    private var firstViolation: String?
    private var conflations = 0
    private var pushes = 0
    private var otherMessages = 0
    private var protocolErrors = 0
    private var closedDuringRun = 0
    /// Pings from the server, each answered with a pong.
    var pings = 0
    private var firstClose: String?

    // Measurements.
    private var rssBefore: Double?
    private var rssAfter: Double?
    private var serverCPUStart: (user: Double, system: Double)?
    private var serverCPUEnd: (user: Double, system: Double)?
    private var ownCPUStart = 0.0
    private var ownCPUEnd = 0.0
    /// Frame bytes the subscribers received (headers included), and how many of them came before
    /// the firing (the snapshots).
    var wireBytes = 0
    private var snapshotWireBytes = 0

    init(options: BenchOptions) throws {
        self.options = options
        loop = .allocate(capacity: 1)
        let status = uv_loop_init(loop)
        guard status == 0 else { throw BenchError("uv_loop_init: \(String(cString: uv_strerror(status)))") }
        uv_timer_init(loop, timeoutTimer)
        uv_timer_init(loop, settleTimer)
        timeoutTimer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        settleTimer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Runs to the end; the exit status (0 when every event reached every subscriber).
    func run() -> Int32 {
        if let pid = options.serverPID {
            rssBefore = ProcStats.residentBytes(pid: pid)
            if rssBefore == nil { print("warning: cannot read /proc/\(pid)/status: no server figures") }
        }
        print("reactor-bench: \(options.subscribers) subscribers on ws://127.0.0.1:\(options.port)/subscribe, \(options.events) events, window \(options.window)")
        uv_timer_start(timeoutTimer, { timer in
            Unmanaged<Bench>.fromOpaque(timer!.pointee.data).takeUnretainedValue().timedOut()
        }, UInt64(options.timeout * 1000), 0)
        subscribers.reserveCapacity(options.subscribers)
        connectStart = uv_hrtime()
        connectMore()
        uv_run(loop, UV_RUN_DEFAULT)
        return exitStatus
    }

    // MARK: Connecting

    private func connectMore() {
        while phase == .connecting && started < options.subscribers && inHandshake < options.connectWindow {
            let subscriber = Subscriber(bench: self, index: started)
            subscribers.append(subscriber)
            started += 1
            inHandshake += 1
            subscriber.start()
        }
    }

    func subscriberFailed(_ subscriber: Subscriber, reason: String) {
        failed += 1
        if firstFailure == nil { firstFailure = "subscriber \(subscriber.index): \(reason)" }
        if !subscriber.hasSnapshot { inHandshake -= 1 }
        connectionsSettled()
    }

    private func connectionsSettled() {
        guard phase == .connecting else { return }
        connectMore()
        guard ready + failed == options.subscribers else { return }
        connectEnd = uv_hrtime()
        let seconds = Double(connectEnd - connectStart) / 1e9
        print("connected: \(ready) subscribers with their snapshot in \(format(seconds)) s\(failed > 0 ? ", \(failed) failed (first: \(firstFailure!))" : "")")
        guard ready > 0 else { return finish(status: 1, note: "no subscriber connected") }
        phase = .settling
        uv_timer_start(settleTimer, { timer in
            Unmanaged<Bench>.fromOpaque(timer!.pointee.data).takeUnretainedValue().startFiring()
        }, UInt64(options.settle * 1000), 0)
    }

    // MARK: Messages

    func received(_ kind: MessageKind, version: UInt64, by subscriber: Subscriber) {
        switch kind {
        case .snapshot:
            if !subscriber.hasSnapshot {
                subscriber.hasSnapshot = true
                subscriber.lastVersion = version
                ready += 1
                inHandshake -= 1
                connectionsSettled()
            } else if version > subscriber.lastVersion {
                // Conflated: the server dropped patches and caught this subscriber up at once.
                conflations += 1
                advance(subscriber, to: version)
            } else {
                violation(subscriber, "snapshot version \(version) after version \(subscriber.lastVersion)")
            }
        case .patch:
            guard subscriber.hasSnapshot else { return violation(subscriber, "patch \(version) before the snapshot") }
            if version == subscriber.lastVersion + 1 {
                pushes += 1
                advance(subscriber, to: version)
            } else {
                violation(subscriber, "patch version \(version) after version \(subscriber.lastVersion)")
                if version > subscriber.lastVersion {
                    pushes += 1
                    advance(subscriber, to: version)
                }
            }
        case .other:
            otherMessages += 1
        }
    }

    private func violation(_ subscriber: Subscriber, _ what: String) {
        violations += 1
        if firstViolation == nil { firstViolation = "subscriber \(subscriber.index): \(what)" }
    }

    /// `subscriber` now has every version up to `version`.
    private func advance(_ subscriber: Subscriber, to version: UInt64) {
        let from = subscriber.lastVersion
        subscriber.lastVersion = version
        guard phase == .firing || phase == .done else {
            return violation(subscriber, "version \(version) arrived before any event was fired")
        }
        var now: UInt64 = 0
        let low = max(from, base) + 1
        let high = min(version, base + UInt64(options.events))
        guard low <= high else { return }
        for v in low...high {
            let i = Int(v - base)
            remaining[i] -= 1
            if remaining[i] == 0 {
                if now == 0 { now = uv_hrtime() }
                completedAt[i] = now
                completed += 1
            }
        }
        if completed == options.events && answered == options.events {
            finish(status: 0, note: nil)
        } else {
            pump()
        }
    }

    func subscriberClosed(_ subscriber: Subscriber, reason: String) {
        closedDuringRun += 1
        if firstClose == nil { firstClose = "subscriber \(subscriber.index): \(reason)" }
        if phase == .connecting {
            failed += 1
            if !subscriber.hasSnapshot { inHandshake -= 1 }
            return connectionsSettled()
        }
        // It will see no more versions: stop waiting for it.
        if phase == .settling { ready -= 1; return }
        guard phase == .firing else { return }
        let low = max(subscriber.lastVersion, base) + 1
        let high = base + UInt64(options.events)
        guard low <= high else { return }
        let now = uv_hrtime()
        for v in low...high {
            let i = Int(v - base)
            remaining[i] -= 1
            if remaining[i] == 0 { completedAt[i] = now; completed += 1 }
        }
        if completed == options.events && answered == options.events { finish(status: 1, note: "a subscriber closed during the run") }
    }

    func protocolError(_ subscriber: Subscriber, _ what: String) {
        protocolErrors += 1
        violation(subscriber, what)
    }

    // MARK: Firing

    private func startFiring() {
        guard phase == .settling else { return }
        let versions = Set(subscribers.lazy.filter { $0.hasSnapshot && $0.phase == .open }.map(\.lastVersion))
        if versions.count > 1 { print("note: the snapshots have \(versions.count) different versions") }
        base = versions.max() ?? 0
        remaining = Array(repeating: Int32(ready), count: options.events + 1)
        completedAt = Array(repeating: 0, count: options.events + 1)
        versionSentAt = Array(repeating: 0, count: options.events + 1)
        sentAt.reserveCapacity(options.events)
        if let pid = options.serverPID {
            rssAfter = ProcStats.residentBytes(pid: pid)
            serverCPUStart = ProcStats.cpuMicroseconds(pid: pid)
        }
        ownCPUStart = ProcStats.ownCPUMicroseconds()
        snapshotWireBytes = wireBytes
        phase = .firing
        firingStart = uv_hrtime()
        firer = EventFirer(bench: self, body: options.eventBody)
        firer.start()
    }

    /// Sends the next event if the connection is free and the window allows.
    func pump() {
        guard phase == .firing, let firer, firer.isConnected, !firer.isBusy else { return }
        guard sent < options.events, sent - completed < options.window else { return }
        sentAt.append(uv_hrtime())
        sent += 1
        firer.send()
    }

    func answered(version: UInt64) {
        let event = answered
        answered += 1
        guard version > base, version <= base + UInt64(options.events) else {
            return finish(status: 1, note: "event \(event + 1) answered version \(version), outside \(base + 1)...\(base + UInt64(options.events)): is something else firing at this server?")
        }
        versionSentAt[Int(version - base)] = sentAt[event]
        if completed == options.events && answered == options.events {
            finish(status: 0, note: nil)
        } else {
            pump()
        }
    }

    func firerFailed(_ reason: String) {
        finish(status: 1, note: "firing events: \(reason)")
    }

    private func timedOut() {
        let note: String
        switch phase {
        case .connecting: note = "timed out after \(format(options.timeout, 0)) s connecting: \(ready) of \(options.subscribers) subscribers ready, \(failed) failed"
        default: note = "timed out after \(format(options.timeout, 0)) s: \(sent) events sent, \(answered) answered, \(completed) delivered to every subscriber"
        }
        finish(status: 2, note: note)
    }

    // MARK: The end

    private func finish(status: Int32, note: String?) {
        guard phase != .done else { return }
        let wasFiring = phase == .firing
        phase = .done
        firingEnd = uv_hrtime()
        if wasFiring {
            ownCPUEnd = ProcStats.ownCPUMicroseconds()
            if let pid = options.serverPID { serverCPUEnd = ProcStats.cpuMicroseconds(pid: pid) }
        }
        exitStatus = status
        if let note { print("reactor-bench: \(note)") }
        if wasFiring { report() }
        let settled = status == 0 && violations == 0
        if !settled && exitStatus == 0 { exitStatus = 1 }
        // Close everything and let the loop end.
        uv_timer_stop(timeoutTimer)
        uv_timer_stop(settleTimer)
        uv_walk(loop, { handle, _ in
            if uv_is_closing(handle) == 0 { uv_close(handle, nil) }
        }, nil)
    }

    private func report() {
        let wall = Double(firingEnd - firingStart) / 1e9
        var latencies: [Double] = []
        latencies.reserveCapacity(options.events)
        for i in 1...options.events where completedAt[i] != 0 && versionSentAt[i] != 0 {
            latencies.append(Double(completedAt[i] &- versionSentAt[i]) / 1e6)
        }
        let p = Percentiles(latencies)
        let pushesPerSecond = Double(pushes) / wall
        print("")
        print("events: \(sent) sent, \(answered) answered, \(completed) delivered to all \(ready) subscribers in \(format(wall, 3)) s (\(format(Double(answered) / wall, 1)) events/s)")
        print("fan-out latency, POST sent -> last subscriber has the version (\(latencies.count) events): p50 \(format(p(50), 3)) ms, p99 \(format(p(99), 3)) ms, max \(format(p.max, 3)) ms")
        print("pushes: \(pushes) patch messages received (\(ready) x \(options.events) = \(ready * options.events) expected), \(format(pushesPerSecond, 0)) pushes/s")

        var cpuPerPush = Double.nan, rssPerSubscriber = Double.nan, serverCPUShare = Double.nan
        var userPerPush = Double.nan, systemPerPush = Double.nan
        if let start = serverCPUStart, let end = serverCPUEnd {
            let user = end.user - start.user, system = end.system - start.system
            let perPush = 1 / Double(max(pushes, 1))
            (cpuPerPush, userPerPush, systemPerPush) = ((user + system) * perPush, user * perPush, system * perPush)
            serverCPUShare = (user + system) / (wall * 1e6)
            print("server CPU: \(format((user + system) / 1000, 1)) ms over the firing (\(format(serverCPUShare * 100, 0)) % of a core), \(format(cpuPerPush, 3)) µs per push: user \(format(userPerPush, 3)), system \(format(systemPerPush, 3)) (from /proc/\(options.serverPID!)/stat, 10 ms ticks)")
        }
        if let before = rssBefore, let after = rssAfter {
            rssPerSubscriber = (after - before) / Double(ready)
            print("server RSS: \(format(before / 1048576, 1)) MiB before the subscribers, \(format(after / 1048576, 1)) MiB with \(ready) idle subscribers: \(format(rssPerSubscriber, 0)) bytes (\(format(rssPerSubscriber / 1024, 2)) KiB) per subscriber")
        }
        let snapshotBytes = Double(snapshotWireBytes) / Double(max(ready, 1))
        let bytesPerPush = Double(wireBytes - snapshotWireBytes) / Double(max(pushes, 1))
        print("wire: \(format(snapshotBytes, 0)) bytes per snapshot, \(format(bytesPerPush, 1)) bytes per push (WebSocket frames, headers included)\(options.deflate ? ", permessage-deflate" : "")")
        let ownCPU = ownCPUEnd - ownCPUStart
        let ownShare = ownCPU / (wall * 1e6)
        print("generator CPU: \(format(ownCPU / 1000, 1)) ms over the firing (\(format(ownShare * 100, 0)) % of the wall time)")
        if ownShare >= 0.9 {
            print("WARNING: the generator was busy \(format(ownShare * 100, 0)) % of the time: it is the bottleneck, so latency and pushes/s measure it, not the server (CPU per push still holds)")
        }
        print("order: \(violations) violations\(firstViolation.map { " (first: \($0))" } ?? ""), \(conflations) conflations (snapshot instead of patches), \(protocolErrors) protocol errors, \(otherMessages) other messages, \(pings) pings answered, \(closedDuringRun) subscribers closed\(firstClose.map { " (first: \($0))" } ?? "")")
        print("RESULT subscribers=\(ready) events=\(options.events) p50_ms=\(format(p(50), 3)) p99_ms=\(format(p(99), 3)) max_ms=\(format(p.max, 3))"
            + " pushes_per_s=\(format(pushesPerSecond, 0)) server_cpu_us_per_push=\(format(cpuPerPush, 3)) server_user_us_per_push=\(format(userPerPush, 3)) server_system_us_per_push=\(format(systemPerPush, 3)) server_cpu_share=\(format(serverCPUShare, 3))"
            + " rss_bytes_per_subscriber=\(format(rssPerSubscriber, 0)) generator_cpu_share=\(format(ownShare, 3))"
            + " snapshot_wire_bytes=\(format(snapshotBytes, 0)) wire_bytes_per_push=\(format(bytesPerPush, 1))"
            + " violations=\(violations) conflations=\(conflations) closed=\(closedDuringRun)")
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
