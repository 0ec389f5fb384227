import CUV

/// The clock durations and rates are measured with: libuv's monotonic clock, in nanoseconds. Here,
/// under Loop/, so that the layers above time requests and limit rates without calling libuv.
enum MonotonicClock {
    @inline(__always)
    static func nanoseconds() -> UInt64 { uv_hrtime() }
}
