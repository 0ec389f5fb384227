import CUV

/// Inflates one connection's permessage-deflate messages (RFC 7692), keeping the window from one
/// message to the next: a server that keeps its context refers back to earlier messages.
final class MessageInflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    init() {
        stream.initialize(to: z_stream())
        precondition(inflateInit2_(stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// The message, or nil if `payload` is not deflate data.
    func inflate(_ payload: UnsafeRawBufferPointer) -> [UInt8]? {
        // §7.2.2: the sender removed this empty block's bytes; the receiver puts them back.
        let input = Array(payload) + [0x00, 0x00, 0xFF, 0xFF]
        var output: [UInt8] = []
        var streamEnded = false
        let ok = input.withUnsafeBytes { input -> Bool in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(input.count)
            return scratch.withUnsafeMutableBufferPointer { scratch in
                while true {
                    stream.pointee.next_out = scratch.baseAddress
                    stream.pointee.avail_out = UInt32(scratch.count)
                    let status = CUV.inflate(stream, Z_SYNC_FLUSH)
                    output.append(contentsOf: scratch[..<(scratch.count - Int(stream.pointee.avail_out))])
                    if status == Z_STREAM_END { streamEnded = true }
                    if status == Z_STREAM_END || (status == Z_OK || status == Z_BUF_ERROR) && stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return true }
                    if status != Z_OK { return false }
                }
            }
        }
        stream.pointee.next_in = nil
        // A message that ended the deflate stream (BFINAL) leaves the next one a fresh stream, window and all.
        if ok && streamEnded { inflateReset(stream) }
        return ok ? output : nil
    }
}
