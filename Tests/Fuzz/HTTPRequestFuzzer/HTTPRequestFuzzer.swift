import FuzzSupport
import ReactorServer

/// The property fuzzed: any bytes, fed whole and then split at a point the input chooses, assemble
/// the same requests (or the same error) both ways, with each request's buffers recycled into the
/// next, and never crash.
func check(_ bytes: UnsafeRawBufferPointer) {
    let whole = events(feeding: [bytes])
    if bytes.count > 1 {
        let cut = Int(bytes[0]) % bytes.count
        let split = events(feeding: [UnsafeRawBufferPointer(rebasing: bytes[..<cut]), UnsafeRawBufferPointer(rebasing: bytes[cut...])])
        precondition(whole == split, "a split changed what the parser saw")
    }
}

private func events(feeding pieces: [UnsafeRawBufferPointer]) -> [HTTPRequestParser.Output] {
    let parser = HTTPRequestParser(limits: HTTPLimits(maxHeaderBytes: 4096, maxBodyBytes: 8192, maxHeaderCount: 32))
    var events: [HTTPRequestParser.Output] = []
    func drain(_ bytes: UnsafeRawBufferPointer) {
        var input = bytes
        while let event = parser.next(from: &input) {
            events.append(event)
            // As the server does: a handled request's buffers serve the next one.
            if case .request(let request) = event { parser.recycle(request) }
            // Keep speaking HTTP after an upgrade, so the rest of the input is parsed too.
            if case .upgrade(_, let leftover) = event {
                parser.declineUpgrade()
                leftover.withUnsafeBytes { drain($0) }
            }
        }
    }
    for piece in pieces { drain(piece) }
    if let last = parser.finish() { events.append(last) }
    return events
}

@main
enum HTTPRequestFuzzer {
    static func main() throws {
        try runFuzzer(check)
    }
}
