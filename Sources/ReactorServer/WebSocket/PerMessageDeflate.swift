/// The permessage-deflate extension (RFC 7692) as this server agrees to it. The client is asked
/// to compress each message on its own (`client_no_context_takeover`), so a connection keeps no
/// inflate state between messages. The server keeps its context from message to message unless
/// the client asks it not to (`server_no_context_takeover`): its pushes come from one compressor
/// per selection, shared by the subscribers in step with it (`SharedDeflateStream`).
public struct PerMessageDeflate: Hashable, Sendable {
    /// The largest window the client lets the server's compressed messages use (§7.1.2.1).
    public let serverMaxWindowBits: Int
    /// The client asked that each of the server's messages be compressed on its own.
    public let serverNoContextTakeover: Bool
    /// The offer named `server_max_window_bits`, which the answer must then name too, even at 15.
    public let serverMaxWindowBitsOffered: Bool

    public init(serverMaxWindowBits: Int = 15, serverNoContextTakeover: Bool = false, serverMaxWindowBitsOffered: Bool = false) {
        self.serverMaxWindowBits = serverMaxWindowBits
        self.serverNoContextTakeover = serverNoContextTakeover
        self.serverMaxWindowBitsOffered = serverMaxWindowBitsOffered || serverMaxWindowBits < 15
    }

    /// The `Sec-WebSocket-Extensions` value of the 101 response.
    public var responseHeaderValue: String {
        var value = "permessage-deflate"
        if serverNoContextTakeover { value += "; server_no_context_takeover" }
        value += "; client_no_context_takeover"
        if serverMaxWindowBitsOffered { value += "; server_max_window_bits=\(serverMaxWindowBits)" }
        return value
    }

    /// The first offer in a `Sec-WebSocket-Extensions` request value (repeated fields joined by
    /// ", ") that this server accepts, or nil. An offer with an unknown, repeated or malformed
    /// parameter is declined, as §7.1 asks, and the next one considered.
    public static func negotiate(offers: String?) -> PerMessageDeflate? {
        guard let offers else { return nil }
        for offer in offers.split(separator: ",") {
            let parts = offer.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingOWS() }
            guard parts.first == "permessage-deflate" else { continue }
            if let accepted = accept(parameters: parts.dropFirst()) { return accepted }
        }
        return nil
    }

    private static func accept(parameters: ArraySlice<Substring>) -> PerMessageDeflate? {
        var seen = Set<Substring>()
        var serverMaxWindowBits: Int?
        var serverNoContextTakeover = false
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = pair[0].trimmingOWS()
            guard seen.insert(name).inserted else { return nil }
            let value = pair.count == 2 ? unquoted(pair[1].trimmingOWS()) : nil
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
            case "server_max_window_bits":
                guard let bits = value.flatMap(windowBits) else { return nil }
                serverMaxWindowBits = bits
            case "client_max_window_bits":
                // The client may cap its own window; this server inflates with the largest one.
                if let value, windowBits(value) == nil { return nil }
            default:
                return nil
            }
        }
        return PerMessageDeflate(serverMaxWindowBits: serverMaxWindowBits ?? 15, serverNoContextTakeover: serverNoContextTakeover,
                                 serverMaxWindowBitsOffered: serverMaxWindowBits != nil)
    }

    /// 8 to 15, in decimal without leading zeros (§7.1.2.1).
    private static func windowBits(_ text: Substring) -> Int? {
        guard let bits = Int(text), (8...15).contains(bits), String(bits) == text else { return nil }
        return bits
    }

    /// A parameter value may be a quoted string (RFC 6455 §9.1); the ones defined here never need escapes.
    private static func unquoted(_ text: Substring) -> Substring {
        guard text.count >= 2, text.first == "\"", text.last == "\"" else { return text }
        return text.dropFirst().dropLast()
    }
}

private extension Substring {
    func trimmingOWS() -> Substring {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isOWS($0) }) else { return "" }
        return self[first...lastIndex(where: { !isOWS($0) })!]
    }
}
