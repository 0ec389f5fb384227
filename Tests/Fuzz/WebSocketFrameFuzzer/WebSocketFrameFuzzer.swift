import FuzzSupport
import ReactorServer

/// The property fuzzed: any bytes, fed whole and then byte by byte, decode to the same frames (or
/// the same close code), and never crash.
func check(_ bytes: UnsafeRawBufferPointer) {
    let limits = WebSocketLimits(maxFramePayload: 4096, maxMessageSize: 8192)
    var whole = WebSocketFrameDecoder(limits: limits)
    let wholeEvents = whole.feed(bytes)
    var bytewise = WebSocketFrameDecoder(limits: limits)
    var bytewiseEvents: [WebSocketFrameDecoder.Event] = []
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
