import CUV

/// One server-side TLS connection as a state machine over memory: ciphertext read from the socket
/// goes in and the plaintext it carries comes out; plaintext to send goes in and the ciphertext
/// for the socket comes out. No sockets and no blocking calls (OpenSSL's memory BIOs), so the loop
/// thread drives any number of these, and a test drives one with bytes alone.
final class TLSSession {
    enum Outcome: Equatable {
        /// All the ciphertext was taken; more may be needed.
        case open
        /// The peer sent close_notify: nothing more will come from it. It still reads what it is
        /// sent until this side's close_notify (RFC 8446 §6.1).
        case closed
        /// The handshake or a record failed (a protocol error, a bad certificate, not TLS at all).
        case failed(String)
    }

    private let ssl: OpaquePointer
    /// Ciphertext from the peer, read by OpenSSL.
    private let incoming: OpaquePointer
    /// Ciphertext for the peer, written by OpenSSL.
    private let outgoing: OpaquePointer
    private(set) var isEstablished = false
    private(set) var outcome = Outcome.open

    init(context: TLSContext) {
        ssl = SSL_new(context.context)!
        incoming = BIO_new(BIO_s_mem())!
        outgoing = BIO_new(BIO_s_mem())!
        // An empty memory BIO says "try again", not "end of file".
        _ = BIO_ctrl(incoming, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        _ = BIO_ctrl(outgoing, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, incoming, outgoing)  // the SSL owns both from here
        SSL_set_accept_state(ssl)
    }

    deinit {
        SSL_free(ssl)
    }

    /// The protocol ALPN settled on, if any.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Takes `ciphertext` and hands each run of plaintext it completes to `deliver`, using
    /// `scratch` to decrypt into. Handshake messages to answer are left in the output.
    func receive(_ ciphertext: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) -> Outcome {
        guard outcome == .open else { return outcome }
        var offset = 0
        while offset < ciphertext.count {
            let written = BIO_write(incoming, ciphertext.baseAddress! + offset, Int32(min(ciphertext.count - offset, Int(Int32.max))))
            guard written > 0 else { return fail("could not buffer the peer's bytes") }
            offset += Int(written)
        }
        while true {
            let count = SSL_read(ssl, scratch.baseAddress, Int32(scratch.count))
            if count > 0 {
                isEstablished = true
                deliver(UnsafeRawBufferPointer(start: scratch.baseAddress, count: Int(count)))
                continue
            }
            if SSL_is_init_finished(ssl) == 1 { isEstablished = true }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .open
            case SSL_ERROR_ZERO_RETURN:
                outcome = .closed
                return .closed
            default:
                return fail(TLSContext.openSSLError())
            }
        }
    }

    /// Encrypts `plaintext` into the output. False when the handshake has not finished (nothing
    /// can be sent yet) or the session failed; the bytes are dropped then.
    func send(_ plaintext: UnsafeRawBufferPointer) -> Bool {
        guard isEstablished, outcome == .open || outcome == .closed else { return false }
        var offset = 0
        while offset < plaintext.count {
            let count = SSL_write(ssl, plaintext.baseAddress! + offset, Int32(min(plaintext.count - offset, 1 << 30)))
            guard count > 0 else {
                _ = fail(TLSContext.openSSLError())
                return false
            }
            offset += Int(count)
        }
        return true
    }

    /// Queues close_notify, the TLS goodbye, when the session is up.
    func shutdown() {
        guard isEstablished, outcome == .open || outcome == .closed else { return }
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Ciphertext waiting for the socket.
    var hasOutput: Bool { BIO_ctrl_pending(outgoing) > 0 }

    /// Moves the waiting ciphertext out through `scratch`, a chunk at a time.
    func takeOutput(scratch: UnsafeMutableRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        while BIO_ctrl_pending(outgoing) > 0 {
            let count = BIO_read(outgoing, scratch.baseAddress, Int32(scratch.count))
            guard count > 0 else { return }
            body(UnsafeRawBufferPointer(start: scratch.baseAddress, count: Int(count)))
        }
    }

    private func fail(_ reason: String) -> Outcome {
        outcome = .failed(reason)
        return outcome
    }
}
