import CUV
import Foundation

/// Why a certificate and key cannot serve TLS, said so that an operator knows what to fix.
public struct TLSConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A certificate chain and its private key, loaded into an OpenSSL context that new TLS
/// connections start from: TLS 1.2 and 1.3, ALPN `http/1.1`. Immutable once made; a reload makes
/// another, and connections already open keep the one they started with.
/// @unchecked Sendable: OpenSSL's SSL_CTX is safe to share between threads once configured.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// When the certificate stops being valid.
    public let notAfter: Date
    /// The certificate's subject, for the log.
    public let subject: String

    /// Loads `certificateFile` (PEM: the certificate, then any intermediates) and `keyFile` (PEM).
    /// Refuses a file that does not load, a key that is not the certificate's, and a certificate
    /// that is expired or not valid yet.
    public init(certificateFile: String, keyFile: String, now: Date = Date()) throws(TLSConfigurationError) {
        // Every property is set last: a throw before that frees the context here, not in deinit.
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSConfigurationError("OpenSSL could not make a TLS context: \(Self.openSSLError())") }
        _ = cuv_ssl_ctx_set_min_proto_version(context, TLS1_2_VERSION)
        // Idle connections give their read and write buffers back (some 34 KiB each).
        _ = cuv_ssl_ctx_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
        cuv_ssl_ctx_set_server_options(context)
        cuv_ssl_ctx_offer_http11(context)
        guard FileManager.default.isReadableFile(atPath: certificateFile) else {
            SSL_CTX_free(context)
            throw TLSConfigurationError("cannot read the TLS certificate file \(certificateFile)")
        }
        guard FileManager.default.isReadableFile(atPath: keyFile) else {
            SSL_CTX_free(context)
            throw TLSConfigurationError("cannot read the TLS key file \(keyFile)")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            let reason = Self.openSSLError()
            SSL_CTX_free(context)
            throw TLSConfigurationError("the TLS certificate file \(certificateFile) holds no PEM certificate OpenSSL accepts: \(reason)")
        }
        let certificate = SSL_CTX_get0_certificate(context)!
        guard let key = Self.privateKey(in: keyFile) else {
            let reason = Self.openSSLError()
            SSL_CTX_free(context)
            throw TLSConfigurationError("the TLS key file \(keyFile) holds no PEM private key OpenSSL accepts (an encrypted key is not supported): \(reason)")
        }
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(certificate, key) == 1, SSL_CTX_use_PrivateKey(context, key) == 1 else {
            ERR_clear_error()
            SSL_CTX_free(context)
            throw TLSConfigurationError("the TLS key in \(keyFile) is not the key of the certificate in \(certificateFile)")
        }
        let subject = Self.subject(of: certificate)
        var seconds = Int(now.timeIntervalSince1970)
        let notAfter = Self.date(X509_get0_notAfter(certificate)) ?? .distantFuture
        if X509_cmp_time(X509_get0_notAfter(certificate), &seconds) < 0 {
            SSL_CTX_free(context)
            throw TLSConfigurationError("the TLS certificate in \(certificateFile) (\(subject)) expired on \(Self.format(notAfter)); renew it")
        }
        if X509_cmp_time(X509_get0_notBefore(certificate), &seconds) > 0 {
            let notBefore = Self.date(X509_get0_notBefore(certificate)).map(Self.format) ?? "a later date"
            SSL_CTX_free(context)
            throw TLSConfigurationError("the TLS certificate in \(certificateFile) (\(subject)) is not valid before \(notBefore)")
        }
        self.context = context
        self.subject = subject
        self.notAfter = notAfter
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// The oldest error on OpenSSL's queue for this thread, which is then emptied.
    static func openSSLError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "no detail from OpenSSL" }
        var buffer = [UInt8](repeating: 0, count: 256)
        buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count) }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    private static func privateKey(in file: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(file, "r") else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
    }

    private static func subject(of certificate: OpaquePointer) -> String {
        guard let name = X509_get_subject_name(certificate), let text = X509_NAME_oneline(name, nil, 0) else { return "no subject" }
        defer { CRYPTO_free(text, #file, #line) }
        return String(cString: text)
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        var parsed = tm()
        guard let time, ASN1_TIME_to_tm(time, &parsed) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parsed)))
    }

    private static func format(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
