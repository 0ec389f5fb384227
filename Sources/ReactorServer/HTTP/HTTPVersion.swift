/// The protocol versions this server speaks. Anything else is rejected while parsing
/// (`HTTPParseError.unsupportedVersion`), so handlers never see HTTP/0.9 or HTTP/2 here.
public enum HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    case http1_0
    case http1_1

    public var description: String {
        switch self {
        case .http1_0: "HTTP/1.0"
        case .http1_1: "HTTP/1.1"
        }
    }
}
