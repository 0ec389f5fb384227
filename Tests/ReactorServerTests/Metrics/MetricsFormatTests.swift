@testable import ReactorServer
import XCTest

/// The pieces of /metrics and the rate limits, without a server: token buckets, histograms, and the
/// Prometheus text format.
final class MetricsFormatTests: XCTestCase {
    func testATokenBucketAllowsItsBurstThenItsRate() {
        let second: UInt64 = 1_000_000_000
        var bucket = TokenBucket(limit: RateLimit(perSecond: 2, burst: 3), now: 0)
        XCTAssertNil(bucket.take(now: 0))
        XCTAssertNil(bucket.take(now: 0))
        XCTAssertNil(bucket.take(now: 0))
        let wait = try! XCTUnwrap(bucket.take(now: 0))
        XCTAssertEqual(wait, 0.5, accuracy: 1e-9, "one token comes back every half second")
        XCTAssertNotNil(bucket.take(now: second / 4))
        XCTAssertNil(bucket.take(now: second / 2))
        XCTAssertNotNil(bucket.take(now: second / 2))
        // A long pause refills to the burst, no more.
        for _ in 0..<3 { XCTAssertNil(bucket.take(now: 100 * second)) }
        XCTAssertNotNil(bucket.take(now: 100 * second))
    }

    func testAHistogramCountsIntoItsBucketsAndKeepsTheRest() {
        var histogram = Histogram(bounds: [0.1, 1, 10])
        for value in [0.05, 0.1, 0.5, 5, 50] { histogram.observe(value) }
        XCTAssertEqual(histogram.counts, [2, 1, 1])
        XCTAssertEqual(histogram.count, 5)
        XCTAssertEqual(histogram.sum, 55.65, accuracy: 1e-9)
    }

    func testTheTextFormatHasHelpTypeLabelsAndCumulativeBuckets() {
        var text = PrometheusText()
        text.family("requests_total", .counter, help: "Requests.")
        text.sample("requests_total", [("route", "/events"), ("status", "200")], 3)
        text.sample("up", 1)
        var histogram = Histogram(bounds: [0.5, 1])
        histogram.observe(0.25)
        histogram.observe(0.75)
        histogram.observe(2)
        text.histogram("latency_seconds", [("route", "a\"b\\c\nd")], histogram)
        XCTAssertEqual(String(decoding: text.bytes, as: UTF8.self), """
            # HELP requests_total Requests.
            # TYPE requests_total counter
            requests_total{route="/events",status="200"} 3
            up 1
            latency_seconds_bucket{route="a\\"b\\\\c\\nd",le="0.5"} 1
            latency_seconds_bucket{route="a\\"b\\\\c\\nd",le="1"} 2
            latency_seconds_bucket{route="a\\"b\\\\c\\nd",le="+Inf"} 3
            latency_seconds_sum{route="a\\"b\\\\c\\nd"} 3
            latency_seconds_count{route="a\\"b\\\\c\\nd"} 3

            """)
    }
}
