import ByteWords

/// The XOR masking of RFC 6455 §5.3. The same operation masks and unmasks.
enum WebSocketMasking {
    /// XORs `buffer` in place with `key`, where `key` holds the four masking-key octets in wire
    /// order from its low byte up, and `phase` is how many payload bytes of the frame came
    /// before `buffer` (payloads arrive in arbitrary pieces, so a piece can start mid-key).
    static func apply(key: UInt32, phase: Int, to buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        let count = buffer.count
        let shift = UInt32(phase & 3) * 8
        // Rotate so that the key octet for buffer[0] sits in the low byte.
        var rotated = shift == 0 ? key : (key >> shift) | (key << (32 - shift))
        // Eight bytes per step: a masking key repeats every four bytes, so two copies of the
        // rotated key mask a whole word (lane 0, the low byte, is buffer[0]).
        let wide = UInt64(rotated) | UInt64(rotated) << 32
        var i = 0
        while i + 8 <= count {
            ByteWord(bits: ByteWord(loadingFrom: base, at: i).bits ^ wide).store(to: base, at: i)
            i += 8
        }
        while i < count {
            let byte = base.load(fromByteOffset: i, as: UInt8.self)
            base.storeBytes(of: byte ^ UInt8(truncatingIfNeeded: rotated), toByteOffset: i, as: UInt8.self)
            rotated = (rotated >> 8) | (rotated << 24)
            i += 1
        }
    }
}
