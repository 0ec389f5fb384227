import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The requests a remote core makes of one server, for one selection.
struct RemoteEndpoints: Sendable {
    /// The server's base URL, such as `http://127.0.0.1:7070`; a path prefix (a reverse proxy's) is kept.
    let base: URL
    let token: String?
    let path: JSONPointer

    /// `GET /subscribe` over WebSocket, resuming after `since` when given.
    func subscribe(since: ResumePoint?) -> URLRequest {
        var request = request(endpoint: "/subscribe", query: selectionQuery(since: since), webSocket: true)
        request.setValue("reactor.v1", forHTTPHeaderField: "Sec-WebSocket-Protocol")
        return request
    }

    /// `GET /stream` with Server-Sent Events, resuming after `since` when given.
    func stream(since: ResumePoint?) -> URLRequest {
        var request = request(endpoint: "/stream", query: selectionQuery(since: since), webSocket: false)
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        // What a browser's EventSource sends; the `since` parameter says the same and wins.
        if let since {
            request.setValue(since.history.map { "\(since.version)-\($0)" } ?? String(since.version), forHTTPHeaderField: "Last-Event-ID")
        }
        return request
    }

    /// `POST /events` with one event.
    func fire(_ event: JSON) -> URLRequest {
        var request = request(endpoint: "/events", query: [], webSocket: false)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = Data(event.jsonBytes)
        return request
    }

    private func selectionQuery(since: ResumePoint?) -> [(String, String)] {
        var query: [(String, String)] = []
        if !path.isRoot { query.append(("path", path.string)) }
        if let since { query.append(("since", String(since.version))) }
        if let history = since?.history { query.append(("history", history)) }
        return query
    }


    private func request(endpoint: String, query: [(String, String)], webSocket: Bool) -> URLRequest {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else {
            preconditionFailure("\(base) is not a valid URL")
        }
        if webSocket { components.scheme = components.scheme == "https" ? "wss" : "ws" }
        var prefix = components.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        components.percentEncodedPath = prefix + endpoint
        // Built by hand: URLComponents leaves "&", "=" and "+" as they are in query items, and reactord
        // reads "+" as a space.
        components.percentEncodedQuery = query.isEmpty ? nil : query.map { "\($0)=\(Self.percentEncoded($1))" }.joined(separator: "&")
        guard let url = components.url else { preconditionFailure("\(base) does not make a valid \(endpoint) URL") }
        var request = URLRequest(url: url)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// RFC 3986's unreserved characters and "/" as they are, every other byte as %XX.
    private static func percentEncoded(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }
}

/// Where a subscription resumes: after `version`, of the history the snapshot it came from named.
struct ResumePoint: Sendable, Equatable {
    let version: UInt64
    let history: String?
}
