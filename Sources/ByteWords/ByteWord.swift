/// Eight bytes read as one word, so that a scan tests eight bytes per step (SWAR: SIMD within a
/// register). This module is the one place where the server and the JSON parser do word-at-a-time
/// byte work: the HTTP head's field scan, the JSON string scan, the WebSocket UTF-8 check and masking,
/// and the byte comparisons of the hot path all go through it.
///
/// Lanes are the word's bytes in memory order: words are loaded little-endian, so lane 0 is the low
/// byte and the first byte of a match is the lowest marked lane (`firstLane(of:)`). A lane is marked
/// by its high bit (0x80).
///
/// Public rather than `package`: this toolchain does not inline a `package` declaration's
/// `@inlinable` body into another module, and every scan here must inline to cost what a loop
/// written in place costs.
@frozen
public struct ByteWord {
    public var bits: UInt64

    @inlinable @inline(__always)
    public init(bits: UInt64) { self.bits = bits }

    /// The eight bytes at `offset` from `base`, which need no alignment.
    @inlinable @inline(__always)
    public init(loadingFrom base: UnsafeRawPointer, at offset: Int) {
        bits = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Writes the word back to the eight bytes at `offset` from `base`.
    @inlinable @inline(__always)
    public func store(to base: UnsafeMutableRawPointer, at offset: Int) {
        base.storeBytes(of: bits.littleEndian, toByteOffset: offset, as: UInt64.self)
    }

    /// `byte` in each of the eight lanes.
    @inlinable @inline(__always)
    public static func repeating(_ byte: UInt8) -> UInt64 { UInt64(byte) &* 0x0101_0101_0101_0101 }

    /// The lanes that equal `byte`. Exact up to the first such lane; above it a lane may be marked
    /// wrongly (a borrow), so only the lowest marked lane may be relied on.
    @inlinable @inline(__always)
    public func lanes(equalTo byte: UInt8) -> UInt64 {
        let difference = bits ^ Self.repeating(byte)
        return (difference &- 0x0101_0101_0101_0101) & ~difference & 0x8080_8080_8080_8080
    }

    /// The lanes below `byte`, which must be at most 0x80. Exact up to the first such lane, as
    /// `lanes(equalTo:)`.
    @inlinable @inline(__always)
    public func lanes(below byte: UInt8) -> UInt64 {
        (bits &- Self.repeating(byte)) & ~bits & 0x8080_8080_8080_8080
    }

    /// The lanes that are not ASCII (0x80 and above). Exact in every lane.
    @inlinable @inline(__always)
    public var nonASCIILanes: UInt64 { bits & 0x8080_8080_8080_8080 }

    /// The byte offset, within the word, of the lowest marked lane of `marks` (which is not zero).
    @inlinable @inline(__always)
    public static func firstLane(of marks: UInt64) -> Int { marks.trailingZeroBitCount &>> 3 }
}

/// The scans built on `ByteWord`: a word per step while eight bytes are left, a byte per step after.
public enum ByteScan {
    /// The offset of the first byte in `start..<end` of `base` that stops the scan, or `end`.
    /// `wordStops` marks the stopping lanes of a word, exact up to its lowest marked lane (as
    /// `ByteWord`'s lane tests are, and as any union of them is); `byteStops` says the same of one
    /// byte. Inlined with both closures, so the loop compiles to the tests they make.
    @inlinable @inline(__always)
    public static func firstIndex(
        in base: UnsafeRawPointer, from start: Int, to end: Int,
        wordStops: (ByteWord) -> UInt64, byteStops: (UInt8) -> Bool
    ) -> Int {
        var index = start
        while index &+ 8 <= end {
            let marks = wordStops(ByteWord(loadingFrom: base, at: index))
            if marks != 0 { return index &+ ByteWord.firstLane(of: marks) }
            index &+= 8
        }
        while index < end {
            if byteStops(base.load(fromByteOffset: index, as: UInt8.self)) { return index }
            index &+= 1
        }
        return end
    }

    /// Whether the `count` bytes at `given`, each ORed with `setBits`, are the bytes at `wanted`.
    /// With `setBits` 0 this is plain equality; with 0x20 it folds ASCII letters to lower case.
    /// No call into the C library: for the few bytes of a name or a path, `memcmp`'s call costs more
    /// than comparing inline.
    @inlinable @inline(__always)
    public static func equal(_ given: UnsafeRawPointer, _ wanted: UnsafeRawPointer, count: Int, settingBits setBits: UInt8 = 0) -> Bool {
        var offset = 0
        let wideBits = ByteWord.repeating(setBits)
        while offset &+ 8 <= count {
            guard ByteWord(loadingFrom: given, at: offset).bits | wideBits == ByteWord(loadingFrom: wanted, at: offset).bits else {
                return false
            }
            offset &+= 8
        }
        while offset < count {
            guard given.load(fromByteOffset: offset, as: UInt8.self) | setBits == wanted.load(fromByteOffset: offset, as: UInt8.self) else {
                return false
            }
            offset &+= 1
        }
        return true
    }
}
