import Reactor

/// Holds each token to its rate of events, whatever the transport: a core interceptor, like the
/// permission check. Events fired without a token (the server's own, or with no tokens configured)
/// are not limited.
/// @unchecked Sendable: the core runs interceptors on its executor, the loop thread, only.
final class EventRateInterceptor<StateType: HostedState>: Interceptor, @unchecked Sendable {
    private let defaultLimit: RateLimit?
    private let metrics: ServerMetrics
    private var buckets: [String: TokenBucket] = [:]

    init(defaultLimit: RateLimit?, metrics: ServerMetrics) {
        self.defaultLimit = defaultLimit
        self.metrics = metrics
    }

    func intercept(event: Event, state: StateType) throws {}

    func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws {
        guard let principal = principal(of: origin), let limit = principal.token.rateLimit ?? defaultLimit else { return }
        let now = MonotonicClock.nanoseconds()
        var bucket = buckets[principal.name].flatMap { $0.limit == limit ? $0 : nil } ?? TokenBucket(limit: limit, now: now)
        let wait = bucket.take(now: now)
        buckets[principal.name] = bucket
        if let wait {
            metrics.rateLimitedEvents += 1
            throw Problem.rateLimited("token \(principal.name) may fire \(PrometheusText.format(limit.perSecond)) events per second (bursts of \(PrometheusText.format(limit.burst)))", retryAfter: wait)
        }
    }
}
