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
        guard context.scope != nil, let host = request.headers["Host"], !Self.isLoopback(host: host) else {
            return next(request, context, respond)
        }
        respond(Problem.hostNotAllowed(host).response)
    }

    /// Whether `host` (a Host header: a name or address, and perhaps a port) names this machine's
    /// loopback interface.
    static func isLoopback(host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            return name[name.index(after: name.startIndex)..<end] == "::1"
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        if name.hasSuffix(".") { name = name.dropLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
