/// Counts observations into fixed buckets (upper bounds, in seconds or bytes), as Prometheus
/// histograms expose them; a plain value, for one thread.
public struct Histogram: Sendable {
    public let bounds: [Double]
    /// Per bucket, not cumulative: `counts[i]` observations were at most `bounds[i]` and above the
    /// bound before; what exceeds the last bound is only in `count`.
    public private(set) var counts: [UInt64]
    public private(set) var sum = 0.0
    public private(set) var count: UInt64 = 0

    public init(bounds: [Double]) {
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count)
    }

    /// Latencies from 50 µs to 10 s.
    public static var latency: Histogram {
        Histogram(bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10])
    }

    public mutating func observe(_ value: Double) {
        sum += value
        count += 1
        if let index = bounds.firstIndex(where: { value <= $0 }) { counts[index] += 1 }
    }
}
