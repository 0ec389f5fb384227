import CUV

/// Compresses and inflates whole WebSocket messages for permessage-deflate (RFC 7692), with no
/// context carried from one message to the next. One per server, used on its loop thread by every
/// connection in turn, so that an idle connection holds no zlib state at all.
final class MessageCompressor {
    /// Why an inbound compressed message was refused.
    enum InflateFailure: Error, Equatable {
        /// It inflates to more than the limit (a decompression bomb stops here).
        case tooBig
        /// It is not a valid deflate stream.
        case invalid
    }

    private let deflater: UnsafeMutablePointer<z_stream>
    private let inflater: UnsafeMutablePointer<z_stream>
    /// Where zlib writes before the bytes are appended to the result.
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)
    /// What §7.2.1 has the sender remove from the end of each compressed message.
    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// `level`: zlib's, 1 (fastest) to 9 (smallest).
    init(level: Int32 = 6) {
        deflater = .allocate(capacity: 1)
        deflater.initialize(to: z_stream())
        // Negative window bits: a raw deflate stream, no zlib header or checksum (§7.2.1).
        let deflateStatus = deflateInit2_(deflater, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        inflater = .allocate(capacity: 1)
        inflater.initialize(to: z_stream())
        let inflateStatus = inflateInit2_(inflater, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(deflateStatus == Z_OK && inflateStatus == Z_OK, "zlib would not start (out of memory)")
    }

    deinit {
        deflateEnd(deflater)
        inflateEnd(inflater)
        deflater.deallocate()
        inflater.deallocate()
    }

    /// `message` compressed, as the payload of a frame with RSV1 set.
    func deflate(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        deflateReset(deflater)
        return Self.deflate(message, in: deflater, scratch: &scratch)
    }

    /// `message` through `stream` up to a sync flush, with the empty block that ends it removed
    /// (§7.2.1); the stream's window stays as it is for the next message. `scratch` is where zlib
    /// writes before the bytes are appended to the result.
    static func deflate(_ message: UnsafeRawBufferPointer, in stream: UnsafeMutablePointer<z_stream>, scratch: inout [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(message.count / 2 + 16)
        stream.pointee.next_in = UnsafeMutablePointer(mutating: message.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(message.count)
        scratch.withUnsafeMutableBufferPointer { scratch in
            repeat {
                stream.pointee.next_out = scratch.baseAddress
                stream.pointee.avail_out = UInt32(scratch.count)
                CUV.deflate(stream, Z_SYNC_FLUSH)
                output.append(contentsOf: scratch[..<(scratch.count - Int(stream.pointee.avail_out))])
            } while stream.pointee.avail_out == 0
        }
        stream.pointee.next_in = nil
        if output.count >= 4, output.suffix(4).elementsEqual(tail) { output.removeLast(4) }
        return output
    }

    /// The message a compressed payload holds, if it is at most `limit` bytes.
    func inflate(_ payload: [UInt8], limit: Int) -> Result<[UInt8], InflateFailure> {
        inflateReset(inflater)
        var output: [UInt8] = []
        var status = Z_OK
        for part in [payload, Self.tail] where status != Z_STREAM_END {
            status = part.withUnsafeBytes { input in
                inflater.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
                inflater.pointee.avail_in = UInt32(input.count)
                return scratch.withUnsafeMutableBufferPointer { scratch -> Int32 in
                    while true {
                        inflater.pointee.next_out = scratch.baseAddress
                        inflater.pointee.avail_out = UInt32(scratch.count)
                        let status = CUV.inflate(inflater, Z_SYNC_FLUSH)
                        let produced = scratch.count - Int(inflater.pointee.avail_out)
                        guard output.count + produced <= limit else { return Z_MEM_ERROR }
                        output.append(contentsOf: scratch[..<produced])
                        switch status {
                        case Z_OK where inflater.pointee.avail_in > 0 || inflater.pointee.avail_out == 0: continue
                        case Z_OK, Z_BUF_ERROR: return Z_OK
                        case Z_STREAM_END: return Z_STREAM_END
                        default: return Z_DATA_ERROR
                        }
                    }
                }
            }
            inflater.pointee.next_in = nil
            if status == Z_MEM_ERROR { return .failure(.tooBig) }
            if status == Z_DATA_ERROR { return .failure(.invalid) }
        }
        // Whole, a message ends at a block's end (RFC 7692 §7.2.2: the sender flushed it), where
        // zlib says it stands between blocks (data_type's 128); cut short, it ends inside one.
        if status != Z_STREAM_END && inflater.pointee.data_type & 128 == 0 { return .failure(.invalid) }
        return .success(output)
    }
}
