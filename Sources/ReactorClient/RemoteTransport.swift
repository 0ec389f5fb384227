/// How a remote core follows the server's state and fires events at it.
public enum RemoteTransport: String, Sendable, Hashable, CustomStringConvertible {
    /// `GET /subscribe` over WebSocket (subprotocol `reactor.v1`); events are fired over the same socket.
    case webSocket
    /// `GET /stream` with Server-Sent Events; events are fired with `POST /events`.
    case serverSentEvents

    public var description: String { rawValue }
}

/// Which transport a remote core uses.
public enum TransportPreference: Sendable, Hashable {
    /// WebSocket, unless this Foundation cannot open one: swift-corelibs-foundation answers
    /// "WebSockets not supported by libcurl" where libcurl was built without them (Debian 12's is).
    /// The remote core then uses Server-Sent Events for the rest of its life.
    case automatic
    /// WebSocket only: where it is not supported the remote core stops with `.unsupported(.webSocket)`.
    case webSocket
    /// Server-Sent Events only, with events fired over HTTP.
    case serverSentEvents

    /// The transport tried first.
    var first: RemoteTransport {
        switch self {
        case .automatic, .webSocket: .webSocket
        case .serverSentEvents: .serverSentEvents
        }
    }
}
