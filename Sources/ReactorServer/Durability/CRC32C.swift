import CUV

/// CRC-32C (Castagnoli, the polynomial iSCSI, ext4 and most write-ahead logs use), the checksum of
/// every journal record and snapshot: the CPU's own instruction where it has one (`CUV`'s
/// `cuv_crc32c_update`), and slicing-by-8 otherwise, eight table lookups per eight bytes.
public enum CRC32C {
    /// Whether `checksum` uses the CPU's instruction.
    public static let usesHardware = cuv_crc32c_hardware() != 0

    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before them).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard usesHardware else { return softwareChecksum(bytes, continuing: crc) }
        guard let start = bytes.baseAddress else { return crc }
        return ~cuv_crc32c_update(~crc, start, bytes.count)
    }

    /// `checksum` by the tables alone, whatever the CPU.
    public static func softwareChecksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var crc = ~crc
        var index = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { table in
            while count - index >= 8 {
                let low = crc ^ UInt32(littleEndianBytes: bytes, at: index)
                let high = UInt32(littleEndianBytes: bytes, at: index + 4)
                crc = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return ~crc
    }

    public static func checksum(_ bytes: some Collection<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        if let result = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0), continuing: crc) }) {
            return result
        }
        return Array(bytes).withUnsafeBytes { checksum($0, continuing: crc) }
    }

    /// Eight tables of 256 entries: table k gives the CRC of a byte followed by k zero bytes.
    private static let tables: [UInt32] = {
        let polynomial: UInt32 = 0x82F6_3B78  // 0x1EDC6F41, bit-reversed
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            for slice in 1..<8 {
                let previous = tables[(slice - 1) * 256 + byte]
                tables[slice * 256 + byte] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()
}

extension UInt32 {
    init(littleEndianBytes bytes: UnsafeRawBufferPointer, at offset: Int) {
        self = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
}
