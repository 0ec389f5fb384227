/// Why a request could not be assembled. Every case is fatal for the connection: the server
/// answers with `status` (when it still can) and closes.
public enum HTTPParseError: Error, Hashable, Sendable {
    /// Request line + headers (or the trailers) exceed `HTTPLimits.maxHeaderBytes`.
    case headersTooLarge
    /// More header (or trailer) fields than `HTTPLimits.maxHeaderCount`.
    case tooManyHeaders
    /// The declared or received body exceeds `HTTPLimits.maxBodyBytes`, or the chunked framing
    /// around it is out of all proportion to it.
    case bodyTooLarge
    /// A method token llhttp does not know.
    case unsupportedMethod
    /// A Transfer-Encoding other than `chunked` alone (`gzip, chunked`): never read past.
    case unsupportedTransferCoding
    /// A TLS handshake where a request line should be: a client speaking HTTPS to the plain port.
    case tlsOnPlainPort
    /// Anything but HTTP/1.0 and HTTP/1.1.
    case unsupportedVersion
    /// Syntax error. `name` is llhttp's errno name (e.g. `HPE_INVALID_HEADER_TOKEN`), `reason` its
    /// explanation; both are meant for logs, not for the response body.
    case malformed(name: String, reason: String)

    /// The status code to answer with.
    public var status: Int {
        switch self {
        case .headersTooLarge, .tooManyHeaders: 431
        case .bodyTooLarge: 413
        case .unsupportedMethod, .unsupportedTransferCoding: 501
        case .tlsOnPlainPort: 400
        case .unsupportedVersion: 505
        case .malformed: 400
        }
    }
}
