/// The id of a Server-Sent Event: `<version>-<history>`, the version the message brings a
/// subscriber to and the name of the history that version belongs to (`HistoryName`). A browser's
/// `EventSource` reconnects with nothing but the last id it saw, as `Last-Event-ID`: with the
/// history in it, a server that started over is not taken for the one the browser left, as
/// `?since=N&history=H` would not be. The version is digits only, so the first `-` ends it; `-`
/// rather than `@` or `:`, which Fetch counts as CORS-unsafe bytes in a request header's value.
/// A bare version (written by hand, or kept from a server before histories) is taken as this
/// server's, as `since` alone is.
enum EventStreamID {
    static let separator = UInt8(ascii: "-")

    /// The version and history a `Last-Event-ID` names; nil when it is neither form.
    static func parse(_ text: String) -> (version: UInt64, history: String?)? {
        let utf8 = text.utf8
        let versionEnd = utf8.firstIndex(of: separator) ?? utf8.endIndex
        let digits = text.utf8[..<versionEnd]
        // Versions are written as JSON integers (Int64) everywhere; a larger one cannot exist.
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let version = UInt64(Substring(digits)), version <= UInt64(Int64.max) else { return nil }
        guard versionEnd != utf8.endIndex else { return (version, nil) }
        let history = Substring(text.utf8[utf8.index(after: versionEnd)...])
        guard HistoryName.isWellFormed(history) else { return nil }
        return (version, String(history))
    }
}
