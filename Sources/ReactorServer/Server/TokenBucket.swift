/// How much a client may do per second: a sustained rate and a burst above it.
public struct RateLimit: Sendable, Equatable {
    public var perSecond: Double
    public var burst: Double

    public init(perSecond: Double, burst: Double? = nil) {
        self.perSecond = perSecond
        self.burst = max(1, burst ?? perSecond)
    }
}

/// A token bucket: it holds up to `burst` tokens, refills at `perSecond`, and each action takes one.
/// Pure: the caller passes the (monotonic) time.
struct TokenBucket {
    let limit: RateLimit
    private var tokens: Double
    private var updated: UInt64

    init(limit: RateLimit, now: UInt64) {
        self.limit = limit
        tokens = limit.burst
        updated = now
    }

    /// Takes a token if there is one and returns nil; otherwise takes nothing and returns the
    /// seconds until one will be there. `now` is in nanoseconds.
    mutating func take(now: UInt64) -> Double? {
        if now > updated {
            tokens = min(limit.burst, tokens + Double(now - updated) / 1e9 * limit.perSecond)
            updated = now
        }
        guard tokens >= 1 else { return (1 - tokens) / limit.perSecond }
        tokens -= 1
        return nil
    }
}
