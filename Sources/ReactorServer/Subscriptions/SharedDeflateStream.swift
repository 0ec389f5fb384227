import CUV

/// permessage-deflate with the server's context carried from message to message (no
/// `server_no_context_takeover`, RFC 7692 §7.1.1.1), shared: one compressor per selection, whose
/// output serves every subscriber of the selection that has taken each of its messages since the
/// compressor last started afresh. A message is compressed once, for all of them, and refers back
/// to the ones before it, which a short patch needs to shrink at all (its keys and paths are what
/// it repeats).
///
/// A peer's window is every compressed message it inflated, in order. It matches this compressor's
/// history only if the peer took exactly this compressor's messages since a fresh start: one it
/// missed (dropped as a slow consumer) or one compressed elsewhere (its snapshot) puts it out of
/// step. Such a subscriber gets messages compressed on their own (or plain) and asks for a fresh
/// start: from an empty window, nothing after it refers to what came before, so at the next one (at
/// most every `messagesBetweenFreshStarts` messages, so that arrivals do not reset the window on
/// every message) it joins again.
final class SharedDeflateStream {
    /// One message as this stream compressed it.
    struct Entry {
        /// The frame, RSV1 set.
        let frame: [UInt8]
        /// 1, 2, 3, ... in the order compressed.
        let number: UInt64
        /// Compressed from an empty window: any peer may take it.
        let startsAfresh: Bool
    }

    static var messagesBetweenFreshStarts: UInt64 { 8 }

    private let stream: UnsafeMutablePointer<z_stream>
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)
    private var lastNumber: UInt64 = 0
    private var freshStartNumber: UInt64 = 0
    private var wantsFreshStart = false

    init(level: Int32 = 6) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = deflateInit2_(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "zlib would not start (out of memory)")
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// `message` compressed in this stream, the first time it is asked for; the same entry after.
    /// Messages must be asked for in the order they are published.
    func entry(for message: SubscriberMessage) -> Entry {
        if let entry = message.sharedDeflateEntry { return entry }
        lastNumber += 1
        let startsAfresh = lastNumber == 1 || (wantsFreshStart && lastNumber - freshStartNumber >= Self.messagesBetweenFreshStarts)
        if startsAfresh {
            deflateReset(stream)
            freshStartNumber = lastNumber
            wantsFreshStart = false
        }
        let compressed = message.json.withUnsafeBytes { MessageCompressor.deflate($0, in: stream, scratch: &scratch) }
        var frame: [UInt8] = []
        frame.reserveCapacity(WebSocketFrameEncoder.headerLength(payloadCount: compressed.count) + compressed.count)
        WebSocketFrameEncoder.appendHeader(reservedBits: 0b100, opcode: .text, payloadCount: compressed.count, into: &frame)
        frame.append(contentsOf: compressed)
        let entry = Entry(frame: frame, number: lastNumber, startsAfresh: startsAfresh)
        message.sharedDeflateEntry = entry
        return entry
    }

    /// A subscriber is out of step: start afresh soon, so that it can take compressed frames again.
    func requestFreshStart() {
        wantsFreshStart = true
    }
}
