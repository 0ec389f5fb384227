import Foundation

/// An RFC 9457 problem reactord answered with: an HTTP error, or an `error` message over the WebSocket.
///
/// `type` is stable for each kind of problem ("/problems/event-rejected"): branch on it rather than on
/// `detail`, which says in words what went wrong with this very request.
public struct RemoteProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    /// The whole problem as the server sent it, with its extension members (`knownTypes`, `index`,
    /// `parameter`, ...).
    public var json: JSON

    /// The problem in `json`; `status` stands in when the problem carries none.
    public init(json: JSON, status fallbackStatus: Int = 0) {
        self.json = json
        type = json["type"]?.stringValue ?? "about:blank"
        title = json["title"]?.stringValue ?? ""
        status = json["status"]?.int64Value.flatMap { Int(exactly: $0) } ?? fallbackStatus
        detail = json["detail"]?.stringValue
    }

    /// An extension member, such as `knownTypes` or `index`.
    public subscript(member: String) -> JSON? { json[member] }

    public var description: String {
        let words = detail ?? (title.isEmpty ? "HTTP \(status)" : title)
        return "\(status) \(type): \(words)"
    }

    /// The problem of an HTTP error answer, or one made up from it when the body is not a problem
    /// (a proxy's HTML page, say), keeping the status and the start of the body.
    init(httpStatus: Int, body: Data) {
        if let json = try? JSON(parsing: [UInt8](body)), json["type"]?.stringValue != nil {
            self.init(json: json, status: httpStatus)
            return
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        self.init(json: [
            "type": "about:blank",
            "title": .string("HTTP \(httpStatus)"),
            "status": .integer(Int64(httpStatus)),
            "detail": .string(text.isEmpty ? "the server answered HTTP \(httpStatus)" : text),
        ])
    }

    /// Whether asking again could get another answer: server errors, timeouts and rate limits may pass;
    /// any other client error (401, 403, a bad parameter) will not.
    var isWorthRetrying: Bool {
        status >= 500 || status == 408 || status == 429 || status < 400
    }
}
