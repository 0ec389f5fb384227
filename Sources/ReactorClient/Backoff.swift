/// The delays between reconnection attempts: doubling from `initial` up to `maximum`, each drawn from
/// the upper half of its range, so that the many clients a server restart drops together do not all
/// come back in the same instant. The same schedule as the JavaScript client's.
public struct Backoff: Sendable, Hashable {
    /// The ceiling of the first delay.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration

    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The delay before the next attempt after `failures` consecutive failed ones (0 after a connection
    /// that opened, then dropped).
    public func delay(afterFailures failures: Int) -> Duration {
        // Doubling past 2^30 only overflows: the ceiling is long reached by then.
        let ceiling = min(maximum, initial * (1 << min(failures, 30)))
        return ceiling / 2 + ceiling / 2 * Double.random(in: 0...1)
    }
}
