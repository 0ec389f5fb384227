/// One connection attempt to the server, over one transport. It reports what happens to it as
/// `ConnectionEvent`s, in order, ending with exactly one `.ended`; the remote core then drops it.
protocol RemoteConnection: AnyObject, Sendable {
    var transport: RemoteTransport { get }
    func start()
    /// Fires `event` at the server while the connection is open. The answer comes back as an `ack` or
    /// `error` message over a WebSocket, and as `.fireAnswered` from an event stream's `POST /events`.
    func send(fire event: JSON, id: String)
    /// Closes the connection and frees its session; nothing but `.fireAnswered` is reported after this.
    func cancel()
}

/// What a connection reports.
enum ConnectionEvent: Sendable {
    /// The server accepted the subscription: messages follow.
    case opened
    /// One message, as text.
    case message(String)
    /// The connection is over.
    case ended(ConnectionEnd)
    /// The answer to a fire sent with `POST /events`. It may come after the stream it went with ended:
    /// it still counts.
    case fireAnswered(id: String, Result<UInt64, any Error>)
}

/// Why a connection is over.
enum ConnectionEnd: Sendable {
    /// This Foundation cannot open the transport (a WebSocket on a libcurl without WebSocket support).
    case unsupported
    /// The server answered the request with an HTTP error instead of a subscription.
    case answered(RemoteProblem)
    /// Anything else: the server went away, the network failed, the stream went silent.
    case dropped(String)
}
