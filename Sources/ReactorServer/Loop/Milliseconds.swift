/// A duration in seconds, as a host configured it, in whole milliseconds for the loop's timers: at
/// least 1 and at most a year. `UInt64(_:)` traps on infinity, NaN and values past its range, and a
/// configuration may hold any `Double`.
func milliseconds(seconds: Double) -> UInt64 {
    guard seconds > 0 else { return 1 }
    return max(1, UInt64((min(seconds, 365 * 86_400) * 1_000).rounded()))
}
