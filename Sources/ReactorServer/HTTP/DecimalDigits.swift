/// Decimal digits of an unsigned integer without making a String: a response's length, a version.
enum DecimalDigits {
    /// Runs `body` on the ASCII digits of `value`, written (last first) into a buffer on the stack.
    @inline(__always)
    static func withDigits<Result>(of value: UInt64, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64.max has 20 digits
        return withUnsafeMutableBytes(of: &scratch) { digits in
            var start = digits.count
            var rest = value
            repeat {
                start -= 1
                digits[start] = 48 + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            return body(UnsafeRawBufferPointer(rebasing: digits[start...]))
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends the decimal digits of `value` (not negative).
    mutating func appendDecimal<T: BinaryInteger>(_ value: T) {
        DecimalDigits.withDigits(of: UInt64(value)) { append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }
}
