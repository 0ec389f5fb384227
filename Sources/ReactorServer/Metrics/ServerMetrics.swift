/// The server's counters: plain integers on the loop thread, touched where things happen, read
/// when `/metrics` is asked for. No locks: everything that changes them runs on the loop.
///
/// (swift-metrics with a Prometheus backend was the other way: its counters take a lock on every
/// increment, for callers on any thread. Ours are all on one thread, so they need none.)
public final class ServerMetrics {
    /// The routed paths by number, as the router numbered them; requests that matched none are
    /// counted under "unmatched", after them.
    var routes: [String] = [] {
        didSet {
            requests = Array(repeating: StatusCounts(), count: routes.count + 1)
            requestSeconds = Array(repeating: .latency, count: routes.count + 1)
        }
    }
    /// By route number: answers by status, and durations.
    // @exclusivity(unchecked) on the stored properties below: touched on the loop thread only, by increments that call nothing;
    // a dynamic exclusivity check on each access costs more than the work it guards here.
    @exclusivity(unchecked) private(set) var requests: [StatusCounts] = [StatusCounts()]
    @exclusivity(unchecked) private(set) var requestSeconds: [Histogram] = [.latency]
    /// Event types (a handful: the registry's) and their counts, side by side: comparing a short
    /// name with a few others costs less than hashing it, for every event.
    @exclusivity(unchecked) private(set) var eventTypes: [String] = []
    @exclusivity(unchecked) private(set) var eventCounts: [UInt64] = []
    @exclusivity(unchecked) var eventsUndone: UInt64 = 0
    @exclusivity(unchecked) var rateLimitedEvents: UInt64 = 0
    @exclusivity(unchecked) var connectionsAccepted: UInt64 = 0
    @exclusivity(unchecked) var connectionsRefused: [String: UInt64] = [:]
    /// The open connections (HTTP, WebSocket and event streams) of the server that reports here.
    var openConnections: () -> Int = { 0 }

    public init() {}

    func recordRequest(routeIndex: Int, status: Int, seconds: Double) {
        let index = routeIndex >= 0 && routeIndex < routes.count ? routeIndex : routes.count
        requests[index].count(status)
        requestSeconds[index].observe(seconds)
    }

    /// The name a route number stands for in the metrics.
    func routeName(_ index: Int) -> String {
        index < routes.count ? routes[index] : "unmatched"
    }

    func recordEvent(type: String) {
        if let index = eventTypes.firstIndex(of: type) {
            eventCounts[index] += 1
        } else {
            eventTypes.append(type)
            eventCounts.append(1)
        }
    }

    func recordRefusedConnection(reason: String) {
        connectionsRefused[reason, default: 0] += 1
    }
}

/// Answers by status for one route. A route sees a handful of statuses: looking one up in a short
/// array costs less than hashing it, for every request.
struct StatusCounts {
    private(set) var statuses: [Int] = []
    private(set) var counts: [UInt64] = []

    mutating func count(_ status: Int) {
        if let index = statuses.firstIndex(of: status) {
            counts[index] += 1
        } else {
            statuses.append(status)
            counts.append(1)
        }
    }

    /// (status, count) pairs by status.
    var sorted: [(status: Int, count: UInt64)] {
        zip(statuses, counts).map { ($0, $1) }.sorted { $0.status < $1.status }
    }
}
