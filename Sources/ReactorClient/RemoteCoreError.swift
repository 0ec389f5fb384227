/// Why a fire got no answer from the server. (An answer that refuses the event is a `RemoteProblem`.)
public enum RemoteCoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection was open within the fire timeout: the event was not sent.
    case notConnected
    /// The event was sent, but its answer did not come within the fire timeout: it may or may not have
    /// been applied.
    case noAnswer
    /// The connection dropped after the event was sent and before its answer: it may or may not have
    /// been applied. It is never sent again by itself, since that could apply it twice.
    case connectionLost
    /// The remote core was closed before the answer.
    case closed
    /// The remote core stopped because this transport does not work with this Foundation.
    case unsupported(RemoteTransport)
    /// The event does not encode to a JSON object, or encodes a `type` other than its `eventType`.
    case invalidEvent(String)
    /// The server answered something this client cannot read.
    case invalidAnswer(String)

    public var description: String {
        switch self {
        case .notConnected: "not connected to the server within the fire timeout; the event was not sent"
        case .noAnswer: "no answer within the fire timeout; the event may or may not have been applied"
        case .connectionLost: "the connection dropped before the answer; the event may or may not have been applied"
        case .closed: "the remote core is closed"
        case .unsupported(let transport): "\(transport) is not supported by this Foundation"
        case .invalidEvent(let reason): "invalid event: \(reason)"
        case .invalidAnswer(let reason): "unreadable answer from the server: \(reason)"
        }
    }
}
