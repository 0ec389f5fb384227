/// The server's counters: plain integers on the loop thread, touched where things happen, read
/// when `/metrics` is asked for. No locks: everything that changes them runs on the loop.
///
/// (swift-metrics with a Prometheus backend was the other way: its counters take a lock on every
/// increment, for callers on any thread. Ours are all on one thread, so they need none.)
public final class ServerMetrics {
    struct RequestKey: Hashable {
        let route: String
        let status: Int
    }

    private(set) var requests: [RequestKey: UInt64] = [:]
    private(set) var requestSeconds: [String: Histogram] = [:]
    private(set) var eventsApplied: [String: UInt64] = [:]
    var eventsUndone: UInt64 = 0
    var rateLimitedEvents: UInt64 = 0
    var connectionsAccepted: UInt64 = 0
    var connectionsRefused: [String: UInt64] = [:]

    public init() {}

    func recordRequest(route: String?, status: Int, seconds: Double) {
        let route = route ?? "unmatched"
        requests[RequestKey(route: route, status: status), default: 0] += 1
        requestSeconds[route, default: .latency].observe(seconds)
    }

    func recordEvent(type: String) {
        eventsApplied[type, default: 0] += 1
    }

    func recordRefusedConnection(reason: String) {
        connectionsRefused[reason, default: 0] += 1
    }
}
