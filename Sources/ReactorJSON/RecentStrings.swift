import ByteWords

/// The strings the parser made lately from short UTF-8, one table per thread: an object's keys, and
/// short values such as names from a fixed set, arrive again and again (the same members in every
/// request), and making a String from bytes checks them all over again each time, where finding it
/// here costs a hash of two words and one compare.
///
/// Short means at most 15 bytes, what a String holds inline on 64-bit platforms: a slot's String
/// then owns no storage, so it is kept and handed out without reference counting. A slot is known by
/// its bytes in full (two words, zero-padded, the length in the top byte), so a hit is exact; an
/// empty slot holds "" and its words, which is exact too. One table per thread (in its
/// `JSONParserScratch`), so no lock.
struct RecentStrings {
    private static let slotCount = 256
    private let words: UnsafeMutablePointer<(UInt64, UInt64)>
    private let strings: UnsafeMutablePointer<String>

    /// The String of `bytes`, which must be valid UTF-8 (the parser has checked them).
    @inline(__always)
    func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let count = bytes.count
        guard count <= 15, let base = bytes.baseAddress else { return String(decoding: bytes, as: UTF8.self) }
        var low: UInt64 = 0
        var high = UInt64(count) << 56
        if count >= 8 {
            low = ByteWord(loadingFrom: base, at: 0).bits
            // The last eight bytes, shifted down past the ones `low` has (smart shift: by 64, none left).
            high |= ByteWord(loadingFrom: base, at: count - 8).bits >> UInt64((16 - count) * 8)
        } else {
            for index in 0 ..< count { low |= UInt64(base[index]) << UInt64(index * 8) }
        }
        let slot = Int(truncatingIfNeeded: (((low &* 0x9E37_79B9_7F4A_7C15) ^ high) &* 0xC2B2_AE3D_27D4_EB4F) >> 56)
        if words[slot] == (low, high) { return strings[slot] }
        let made = String(decoding: bytes, as: UTF8.self)
        words[slot] = (low, high)
        strings[slot] = made
        return made
    }

    init() {
        words = .allocate(capacity: Self.slotCount)
        words.initialize(repeating: (0, 0), count: Self.slotCount)
        strings = .allocate(capacity: Self.slotCount)
        strings.initialize(repeating: "", count: Self.slotCount)
    }

    /// Frees the table; it is not used again.
    func deallocate() {
        strings.deinitialize(count: Self.slotCount)
        strings.deallocate()
        words.deallocate()
    }
}
