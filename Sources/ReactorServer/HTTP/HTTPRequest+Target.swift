/// Splitting the request-target into path and query. Both are computed on access from `target`
/// so requests that never look at them pay nothing.
extension HTTPRequest {
    /// The path, still percent-encoded (decoding `%2F` would change its meaning). For an
    /// absolute-form target (`http://host/p?q`) it is the part after the authority.
    public var path: Substring {
        // Read once: a parsed target is decoded on each read.
        let target = target
        var path = target[...]
        if let query = Self.queryMark(in: target) { path = target[..<query] }
        // Bytes, not `hasPrefix`: String comparison is Unicode-aware, and this runs for every request.
        guard path.utf8.first != UInt8(ascii: "/"), let schemeEnd = path.firstRange(of: "://") else { return path }
        let authority = path[schemeEnd.upperBound...]
        guard let slash = authority.firstIndex(of: "/") else { return "/" }
        return authority[slash...]
    }

    /// Runs `body` on the path's bytes when the target is in origin form (`/a/b?q`: `/a/b`, as every
    /// client but a proxy sends it), where the path is the target up to any `?`; nil for any other
    /// form, whose `path` takes parsing. For routing, which needs no Substring made.
    func withOriginFormPath<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        withTargetBytes { bytes in
            guard bytes.first == UInt8(ascii: "/") else { return nil }
            let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.count
            return body(UnsafeBufferPointer(rebasing: bytes[..<end]))
        }
    }

    /// Everything after the first `?`, without it; nil when there is no `?`.
    public var query: Substring? {
        let target = target
        guard let mark = Self.queryMark(in: target) else { return nil }
        return target[target.index(after: mark)...]
    }

    /// Where the first `?` in `target` is. Scanned as bytes in place: the target is ASCII, grapheme
    /// breaking is slow, and even the UTF-8 view's index arithmetic costs more than the scan.
    private static func queryMark(in target: String) -> String.Index? {
        let offset = target.utf8.withContiguousStorageIfAvailable { $0.firstIndex(of: UInt8(ascii: "?")) }
        switch offset {
        case let offset??: return target.utf8.index(target.utf8.startIndex, offsetBy: offset)
        case .some(nil): return nil
        case nil: return target.utf8.firstIndex(of: UInt8(ascii: "?"))
        }
    }

    /// `a=b&c=d` pairs in order, percent-decoded with `+` as space. A pair without `=` has an
    /// empty value; empty pairs (`a=1&&b=2`) are skipped.
    public var queryItems: [HTTPQueryItem] {
        guard let query else { return [] }
        return query.split(separator: "&").map { pair in
            let equals = pair.firstIndex(of: "=") ?? pair.endIndex
            let value = equals == pair.endIndex ? pair[equals...] : pair[pair.index(after: equals)...]
            return HTTPQueryItem(
                name: HTTPPercentDecoding.decode(pair[..<equals], plusAsSpace: true),
                value: HTTPPercentDecoding.decode(value, plusAsSpace: true)
            )
        }
    }

    /// The first value for `name` in the query.
    // Inlined: most targets have no query, and where the caller sees the nil it answers with, it
    // skips what it would do with a value (the handlers ask on every request).
    @inline(__always)
    public func queryValue(_ name: String) -> String? {
        guard hasQueryMark else { return nil }
        return firstQueryValue(name)
    }

    /// Whether the target has a `?`, from its bytes (without making it a String).
    var hasQueryMark: Bool {
        withTargetBytes { bytes in
            for byte in bytes where byte == UInt8(ascii: "?") { return true }
            return false
        }
    }

    /// Whether the query gives `name` more than once (`?mode=a&mode=b`): a parameter that takes one
    /// value cannot be read then, since which the client meant cannot be known.
    public func queryRepeats(_ name: String) -> Bool {
        guard hasQueryMark, let query else { return false }
        var seen = false
        for pair in query.split(separator: "&")
        where HTTPPercentDecoding.decode(pair[..<(pair.firstIndex(of: "=") ?? pair.endIndex)], plusAsSpace: true) == name {
            if seen { return true }
            seen = true
        }
        return false
    }

    private func firstQueryValue(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let equals = pair.firstIndex(of: "=") ?? pair.endIndex
            guard HTTPPercentDecoding.decode(pair[..<equals], plusAsSpace: true) == name else { continue }
            let value = equals == pair.endIndex ? pair[equals...] : pair[pair.index(after: equals)...]
            return HTTPPercentDecoding.decode(value, plusAsSpace: true)
        }
        return nil
    }
}

public struct HTTPQueryItem: Hashable, Sendable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
