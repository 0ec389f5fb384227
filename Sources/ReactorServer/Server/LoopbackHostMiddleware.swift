/// A server with no tokens answers only requests addressed to it by a loopback name. Listening on
/// loopback keeps other machines out, but not a web page in a local browser: the page's own host
/// name, re-pointed at 127.0.0.1 (DNS rebinding), would reach the server as the page's origin, and
/// read and fire with nobody's token. The Host such a request carries is the page's name, so it is
/// refused here; `localhost`, names under `.localhost` (RFC 6761), `127.0.0.0/8` and `[::1]` are the
/// names nothing can re-point.
struct LoopbackHostMiddleware: HTTPMiddleware {
    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        // Only what a token would guard (public routes, like answers to broken requests, carry no
        // scope); and no Host at all is HTTP/1.0, which no browser sends.
        guard context.scope != nil, let host = request.headers.firstValueBytes("Host"), !Self.isLoopback(host: host) else {
            return next(request, context, respond)
        }
        respond(Problem.hostNotAllowed(String(decoding: host, as: UTF8.self)).response)
    }

    /// Whether `host` (a Host header's bytes: a name or address, and perhaps a port) names this
    /// machine's loopback interface. On the bytes, with no allocation: every request asks.
    static func isLoopback<Bytes: BidirectionalCollection<UInt8>>(host: Bytes) -> Bool {
        var name = host[...]
        if name.first == UInt8(ascii: "[") {
            guard let end = name.firstIndex(of: UInt8(ascii: "]")) else { return false }
            return name[name.index(after: name.startIndex)..<end].elementsEqual("::1".utf8)
        }
        if let colon = name.lastIndex(of: UInt8(ascii: ":")) { name = name[..<colon] }
        if name.last == UInt8(ascii: ".") { name = name.dropLast() }
        if hasSuffix(name, "localhost") {
            let rest = name.dropLast("localhost".utf8.count)
            return rest.isEmpty || rest.last == UInt8(ascii: ".")
        }
        // 127.a.b.c, each a decimal byte.
        var octets = 0
        var value = -1
        for byte in name {
            if byte == UInt8(ascii: ".") {
                guard value >= 0, octets < 3 else { return false }
                if octets == 0 && value != 127 { return false }
                octets += 1
                value = -1
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                value = max(value, 0) * 10 + Int(byte - UInt8(ascii: "0"))
                guard value <= 255 else { return false }
            } else {
                return false
            }
        }
        return octets == 3 && value >= 0
    }

    /// Whether `name` ends with `suffix`, ignoring ASCII case.
    private static func hasSuffix<Bytes: BidirectionalCollection<UInt8>>(_ name: Bytes, _ suffix: StaticString) -> Bool {
        let tail = suffix.utf8Start
        let count = suffix.utf8CodeUnitCount
        guard name.count >= count else { return false }
        var index = 0
        for byte in name.suffix(count) {
            guard byte | 0x20 == tail[index] else { return false }
            index += 1
        }
        return true
    }
}
