import CUV

/// The request method. The common methods get their own case so routing can switch on them
/// without string comparisons; anything else llhttp accepts arrives as `.other`.
public enum HTTPMethod: Hashable, Sendable {
    case get, head, post, put, delete, options, patch, connect, trace
    case other(String)

    public var name: String {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .patch: "PATCH"
        case .connect: "CONNECT"
        case .trace: "TRACE"
        case .other(let name): name
        }
    }

    /// `code` is llhttp's `llhttp_method_t` as stored in `llhttp_t.method`.
    init(llhttpCode code: UInt8) {
        switch UInt32(code) {
        case HTTP_GET.rawValue: self = .get
        case HTTP_HEAD.rawValue: self = .head
        case HTTP_POST.rawValue: self = .post
        case HTTP_PUT.rawValue: self = .put
        case HTTP_DELETE.rawValue: self = .delete
        case HTTP_OPTIONS.rawValue: self = .options
        case HTTP_PATCH.rawValue: self = .patch
        case HTTP_CONNECT.rawValue: self = .connect
        case HTTP_TRACE.rawValue: self = .trace
        default: self = .other(String(cString: llhttp_method_name(llhttp_method_t(UInt32(code)))))
        }
    }
}
