import Dispatch
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a remote core connects, retries and notifies.
public struct RemoteCoreOptions: Sendable {
    /// WebSocket, falling back to Server-Sent Events where WebSocket is not supported, by default.
    public var transport: TransportPreference = .automatic
    /// The delays between reconnection attempts.
    public var backoff = Backoff()
    /// How long a fire waits for a connection and then for its answer before failing with
    /// `RemoteCoreError.notConnected` or `.noAnswer`.
    public var fireTimeout: Duration = .seconds(10)
    /// How long a Server-Sent Events stream may stay silent before it counts as dropped. reactord sends a
    /// heartbeat after 15 s without output, so a longer silence means a connection that died quietly.
    public var streamIdleTimeout: Duration = .seconds(45)
    /// The largest WebSocket message accepted (a snapshot is one message).
    public var maximumMessageBytes = 64 << 20
    /// Where fire completions run, and subscribers added without a queue of their own are notified.
    /// Nil (the default) means a private serial queue of the remote core's: never the main queue, so
    /// UI code hops to the main queue itself, or passes `.main` here. Give a serial queue: a concurrent
    /// one may reorder the states.
    public var notificationQueue: DispatchQueue? = nil
    /// Decodes the state from the local JSON copy.
    public var decoder = JSONDecoder()
    /// Encodes events.
    public var encoder = JSONEncoder()
    /// The configuration of the remote core's URL sessions (proxies, TLS, extra headers...).
    public var sessionConfiguration: URLSessionConfiguration = .ephemeral

    public init() {}
}
