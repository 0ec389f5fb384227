/// A close status code (RFC 6455 §7.4). A struct rather than an enum because any 16-bit value
/// can arrive on the wire and applications pick their own in 4000–4999.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normalClosure = WebSocketCloseCode(1000)
    public static let goingAway = WebSocketCloseCode(1001)
    public static let protocolError = WebSocketCloseCode(1002)
    public static let unsupportedData = WebSocketCloseCode(1003)
    /// Never on the wire: what to report when a close frame carried no code (§7.1.5).
    public static let noStatusReceived = WebSocketCloseCode(1005)
    /// Never on the wire: what to report when the connection ended without a close frame.
    public static let abnormalClosure = WebSocketCloseCode(1006)
    public static let invalidPayload = WebSocketCloseCode(1007)
    public static let policyViolation = WebSocketCloseCode(1008)
    public static let messageTooBig = WebSocketCloseCode(1009)
    /// Sent by clients only, when the server did not negotiate an extension they require.
    public static let mandatoryExtension = WebSocketCloseCode(1010)
    public static let internalError = WebSocketCloseCode(1011)
    /// Application range (4000–4999, private use): a subscriber that could not keep up with the
    /// broadcast and was dropped rather than buffered without bound.
    public static let slowConsumer = WebSocketCloseCode(4008)

    /// Whether a peer may put this code in a close frame, i.e. whether receiving it is not a
    /// protocol error. 1004–1006 and 1015 are reserved and must never be sent (§7.4.1); 1012–1014
    /// are later IANA registrations that RFC 6455 implementations (and older Autobahn suites)
    /// treat as unassigned; 0–999 and 1016–2999 are unassigned, 3000–3999 are for libraries
    /// and frameworks, 4000–4999 for private use, and nothing above 4999 exists.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1011, 3000...4999: true
        default: false
        }
    }

    public var description: String {
        let name: String? = switch self {
        case .normalClosure: "normal closure"
        case .goingAway: "going away"
        case .protocolError: "protocol error"
        case .unsupportedData: "unsupported data"
        case .noStatusReceived: "no status received"
        case .abnormalClosure: "abnormal closure"
        case .invalidPayload: "invalid payload"
        case .policyViolation: "policy violation"
        case .messageTooBig: "message too big"
        case .mandatoryExtension: "mandatory extension"
        case .internalError: "internal error"
        case .slowConsumer: "slow consumer"
        default: nil
        }
        return name.map { "\(rawValue) (\($0))" } ?? "\(rawValue)"
    }
}
