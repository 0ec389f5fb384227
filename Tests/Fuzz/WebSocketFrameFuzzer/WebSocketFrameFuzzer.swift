import FuzzSupport
import ReactorServer

/// The property fuzzed: any bytes, fed whole and then byte by byte, decode to the same frames (or
/// the same close code), and never crash; with permessage-deflate negotiated for inputs of odd length.
func check(_ bytes: UnsafeRawBufferPointer) {
    let limits = WebSocketLimits(maxFramePayload: 4096, maxMessageSize: 8192)
    var whole = WebSocketFrameDecoder(limits: limits)
    whole.acceptsCompressedMessages = bytes.count % 2 == 1
    let wholeEvents = whole.feed(bytes)
    var bytewise = WebSocketFrameDecoder(limits: limits)
    bytewise.acceptsCompressedMessages = whole.acceptsCompressedMessages
    var bytewiseEvents: [WebSocketFrameDecoder.Output] = []
    for index in bytes.indices {
        bytewiseEvents += bytewise.feed(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + 1)]))
    }
    precondition(wholeEvents == bytewiseEvents, "feeding byte by byte changed what the decoder saw")
}

@main
enum WebSocketFrameFuzzer {
    static func main() throws {
        try runFuzzer(check)
    }
}
