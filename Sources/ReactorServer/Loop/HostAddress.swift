import CUV
import Foundation

/// A host name resolved to a numeric address, off the loop thread: hiredis resolves the host it is
/// given with a blocking `getaddrinfo`, which on the loop thread would stall every connection for as
/// long as DNS takes, at each reconnection.
enum HostAddress {
    /// `host` itself when it is a numeric IPv4 or IPv6 address: nothing to resolve.
    static func numeric(_ host: String) -> String? {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 ? host : nil
    }

    /// The first address `host` resolves to, as text, or why it does not; blocking (a threadpool's work).
    static func resolve(_ host: String) -> Result<String, ResolutionFailure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &found)
        guard status == 0, let first = found else { return .failure(ResolutionFailure(reason: String(cString: gai_strerror(status)))) }
        defer { freeaddrinfo(found) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written: UnsafePointer<CChar>?
        switch first.pointee.ai_family {
        case AF_INET:
            written = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                var bytes = address.pointee.sin_addr
                return inet_ntop(AF_INET, &bytes, &text, socklen_t(text.count))
            }
        case AF_INET6:
            written = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                var bytes = address.pointee.sin6_addr
                return inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count))
            }
        default:
            written = nil
        }
        guard written != nil else { return .failure(ResolutionFailure(reason: "no IPv4 or IPv6 address")) }
        return .success(text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
    }

    struct ResolutionFailure: Error, Sendable {
        let reason: String
    }
}
