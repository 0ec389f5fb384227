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
            counts.requests = Array(repeating: StatusCounts(), count: routes.count + 1)
            counts.requestSeconds = Array(repeating: .latency, count: routes.count + 1)
        }
    }
    /// The counts, in one field so that they need their exclusivity exemption once.
    private struct Counts {
        /// By route number: answers by status, and durations.
        var requests: [StatusCounts] = [StatusCounts()]
        var requestSeconds: [Histogram] = [.latency]
        /// Event types (a handful: the registry's) and their counts, side by side: comparing a short
        /// name with a few others costs less than hashing it, for every event.
        var eventTypes: [String] = []
        var eventCounts: [UInt64] = []
        var eventsUndone: UInt64 = 0
        var rateLimitedEvents: UInt64 = 0
        var connectionsAccepted: UInt64 = 0
        var connectionsRefused: [String: UInt64] = [:]
    }
    /// @exclusivity(unchecked): touched on the loop thread only, by increments that call nothing; a
    /// dynamic exclusivity check on each access would cost more than the work it guards.
    @exclusivity(unchecked) private var counts = Counts()

    var requests: [StatusCounts] { counts.requests }
    var requestSeconds: [Histogram] { counts.requestSeconds }
    var eventTypes: [String] { counts.eventTypes }
    var eventCounts: [UInt64] { counts.eventCounts }
    var connectionsRefused: [String: UInt64] { counts.connectionsRefused }
    var eventsUndone: UInt64 {
        get { counts.eventsUndone }
        set { counts.eventsUndone = newValue }
    }
    var rateLimitedEvents: UInt64 {
        get { counts.rateLimitedEvents }
        set { counts.rateLimitedEvents = newValue }
    }
    var connectionsAccepted: UInt64 {
        get { counts.connectionsAccepted }
        set { counts.connectionsAccepted = newValue }
    }
    /// The open connections (HTTP, WebSocket and event streams) of the server that reports here.
    var openConnections: () -> Int = { 0 }

    public init() {}

    func recordRequest(routeIndex: Int, status: Int, seconds: Double) {
        let index = routeIndex >= 0 && routeIndex < routes.count ? routeIndex : routes.count
        counts.requests[index].count(status)
        counts.requestSeconds[index].observe(seconds)
    }

    /// The name a route number stands for in the metrics.
    func routeName(_ index: Int) -> String {
        index < routes.count ? routes[index] : "unmatched"
    }

    func recordEvent(type: String) {
        if let index = counts.eventTypes.firstIndex(of: type) {
            counts.eventCounts[index] += 1
        } else {
            counts.eventTypes.append(type)
            counts.eventCounts.append(1)
        }
    }

    func recordRefusedConnection(reason: String) {
        counts.connectionsRefused[reason, default: 0] += 1
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
