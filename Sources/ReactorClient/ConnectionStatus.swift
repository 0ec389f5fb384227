/// Where a remote core's connection to the server stands.
public enum ConnectionStatus: Sendable, Equatable, CustomStringConvertible {
    /// Opening the first connection.
    case connecting
    /// Connected over this transport: the local state follows the server's.
    case open(RemoteTransport)
    /// The connection dropped, or an attempt failed: connecting again after a backoff delay. The local
    /// state stays as last received and catches up (`since=` its version) once connected.
    case reconnecting
    /// The server refused the subscription with this problem (an invalid token, a missing scope, a bad
    /// path): asking again would get the same answer, so the remote core stopped.
    case refused(RemoteProblem)
    /// The transport the options insist on cannot work with this Foundation; the remote core stopped.
    case unsupported(RemoteTransport)
    /// `close()` was called.
    case closed

    public var isOpen: Bool {
        if case .open = self { return true }
        return false
    }

    /// True once the remote core has stopped for good: refused, unsupported or closed.
    public var isFinal: Bool {
        switch self {
        case .refused, .unsupported, .closed: true
        case .connecting, .open, .reconnecting: false
        }
    }

    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .open(let transport): "open (\(transport))"
        case .reconnecting: "reconnecting"
        case .refused(let problem): "refused (\(problem.status) \(problem.type))"
        case .unsupported(let transport): "unsupported (\(transport))"
        case .closed: "closed"
        }
    }
}

/// How often a remote core has connected and started over, for monitoring and tests.
public struct ConnectionCounts: Sendable, Equatable {
    /// Connections opened: 1, plus one per reconnection.
    public var connections = 0
    /// Snapshots received: 1, plus one per resume the server could not serve (after a restart that lost
    /// versions, or past its resume window), per fall behind, and per patch that did not apply.
    public var snapshots = 0

    public init() {}
}
