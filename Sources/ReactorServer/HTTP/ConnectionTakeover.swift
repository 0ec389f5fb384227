/// A connection that left HTTP behind (a WebSocket, an event stream): the server still counts it,
/// ticks it for its timers, and tells it when the server shuts down.
public protocol UpgradedConnection: AnyObject {
    /// Called a few times per second with the loop time in milliseconds.
    func tick(now: UInt64)
    /// The server is stopping: say goodbye (WebSocket close 1001) and close.
    func serverIsShuttingDown()
    /// Closes at once (the shutdown deadline passed).
    func close()
}

/// Hands a connection over to another protocol once the response head is written: a WebSocket after
/// its 101, an event stream after its 200. `attach` gets the connection, the bytes that followed
/// the request and what to call once the connection has closed (the server stops counting it), and
/// returns what now owns the connection.
/// @unchecked Sendable: made and used on the loop thread only.
public final class ConnectionTakeover: @unchecked Sendable {
    let attach: (TCPConnection, _ leftover: [UInt8], _ closed: @escaping () -> Void) -> any UpgradedConnection

    public init(attach: @escaping (TCPConnection, _ leftover: [UInt8], _ closed: @escaping () -> Void) -> any UpgradedConnection) {
        self.attach = attach
    }
}
