import CUV
import Foundation
import XCTest

@testable import ReactorServer

/// The server's TLS session driven with bytes alone: an OpenSSL client over memory BIOs plays the
/// peer, and the test carries the ciphertext between them, split as a network might.
final class TLSSessionTests: XCTestCase {
    private static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-session-\(getpid())")
    private static var certificate: String { directory.appendingPathComponent("cert.pem").path }
    private static var key: String { directory.appendingPathComponent("key.pem").path }

    override class func setUp() {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=localhost"]
        openssl.standardError = FileHandle.nullDevice
        try? openssl.run()
        openssl.waitUntilExit()
    }

    override class func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A TLS client over memory: what it writes is taken with `output`, what it reads is given with `input`.
    final class Client {
        let context: OpaquePointer
        let ssl: OpaquePointer
        let incoming: OpaquePointer
        let outgoing: OpaquePointer

        init(alpn: [UInt8]? = Array("\u{8}http/1.1".utf8)) {
            context = SSL_CTX_new(TLS_client_method())!
            ssl = SSL_new(context)!
            incoming = BIO_new(BIO_s_mem())!
            outgoing = BIO_new(BIO_s_mem())!
            SSL_set_bio(ssl, incoming, outgoing)
            if let alpn { _ = SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count)) }
            SSL_set_connect_state(ssl)
        }

        deinit {
            SSL_free(ssl)
            SSL_CTX_free(context)
        }

        func output() -> [UInt8] {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while BIO_ctrl_pending(outgoing) > 0 {
                let count = BIO_read(outgoing, &chunk, Int32(chunk.count))
                bytes += chunk[..<Int(max(count, 0))]
            }
            return bytes
        }

        func input(_ bytes: [UInt8]) { if !bytes.isEmpty { _ = BIO_write(incoming, bytes, Int32(bytes.count)) } }

        /// Drives the handshake or reads: the plaintext that arrived.
        func read() -> [UInt8] {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = SSL_read(ssl, &chunk, Int32(chunk.count))
                guard count > 0 else { return bytes }
                bytes += chunk[..<Int(count)]
            }
        }

        func write(_ text: String) { _ = SSL_write(ssl, text, Int32(text.utf8.count)) }
        var isConnected: Bool { SSL_is_init_finished(ssl) == 1 }
    }

    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    deinit { scratch.deallocate() }

    private func makeServer() throws -> TLSSession {
        TLSSession(context: try TLSContext(certificateFile: Self.certificate, keyFile: Self.key))
    }

    /// Ciphertext from the client to the server in pieces of `piece` bytes; the server's plaintext.
    private func carry(_ bytes: [UInt8], to server: TLSSession, piece: Int = .max) -> (plaintext: [UInt8], outcome: TLSSession.Outcome) {
        var plaintext: [UInt8] = []
        var outcome = TLSSession.Outcome.open
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + piece)
            outcome = bytes[offset..<end].withUnsafeBytes { server.receive($0, scratch: scratch) { plaintext += $0 } }
            offset = end
        } while offset < bytes.count
        return (plaintext, outcome)
    }

    private func output(of server: TLSSession) -> [UInt8] {
        var bytes: [UInt8] = []
        server.takeOutput(scratch: scratch) { bytes += $0 }
        return bytes
    }

    private func handshake(_ client: Client, _ server: TLSSession, piece: Int = .max) {
        for _ in 0..<4 where !(client.isConnected && server.isEstablished) {
            _ = client.read()
            _ = carry(client.output(), to: server, piece: piece)
            client.input(output(of: server))
        }
        _ = client.read()
        _ = carry(client.output(), to: server, piece: piece)
        client.input(output(of: server))
    }

    func testAHandshakeAgreesOnHTTP11AndCarriesDataBothWays() throws {
        let client = Client()
        let server = try makeServer()
        handshake(client, server, piece: 7)
        XCTAssertTrue(client.isConnected)
        XCTAssertTrue(server.isEstablished)
        XCTAssertEqual(server.negotiatedProtocol, "http/1.1")
        client.write("GET /state HTTP/1.1\r\n\r\n")
        XCTAssertEqual(carry(client.output(), to: server, piece: 3).plaintext, Array("GET /state HTTP/1.1\r\n\r\n".utf8))
        let answer = Array(repeating: UInt8(ascii: "a"), count: 100_000)
        XCTAssertTrue(answer.withUnsafeBytes { server.send($0) })
        client.input(output(of: server))
        XCTAssertEqual(client.read(), answer)
    }

    func testNothingIsSentBeforeTheHandshakeIsDone() throws {
        let server = try makeServer()
        XCTAssertFalse(Array("HTTP/1.1 408".utf8).withUnsafeBytes { server.send($0) })
        XCTAssertFalse(server.hasOutput)
    }

    func testAClientThatOffersOnlyAnotherProtocolGetsTheFatalAlert() throws {
        // RFC 7301 §3.2: no_application_protocol, rather than a connection that speaks neither.
        let client = Client(alpn: Array("\u{2}h2".utf8))
        let server = try makeServer()
        handshake(client, server)
        XCTAssertFalse(server.isEstablished)
        XCTAssertFalse(client.isConnected)
        guard case .failed = server.outcome else { return XCTFail("the handshake went on: \(server.outcome)") }
    }

    func testThePeersCloseNotifyEndsItsSideAndTheServerStillSendsThenSaysGoodbye() throws {
        let client = Client()
        let server = try makeServer()
        handshake(client, server)
        _ = SSL_shutdown(client.ssl)
        XCTAssertEqual(carry(client.output(), to: server).outcome, .closed)
        // TLS 1.3 closes one direction at a time (RFC 8446 §6.1): the answer still goes out.
        XCTAssertTrue(Array("answer".utf8).withUnsafeBytes { server.send($0) })
        server.shutdown()
        client.input(output(of: server))
        XCTAssertEqual(client.read(), Array("answer".utf8))
        XCTAssertEqual(SSL_get_shutdown(client.ssl) & Int32(SSL_RECEIVED_SHUTDOWN), Int32(SSL_RECEIVED_SHUTDOWN), "no close_notify came back")
    }

    func testBytesThatAreNotTLSFailTheSession() throws {
        let server = try makeServer()
        guard case .failed = carry(Array("GET / HTTP/1.1\r\n\r\n".utf8), to: server).outcome else { return XCTFail("plain HTTP is no TLS") }
        XCTAssertFalse(Array("x".utf8).withUnsafeBytes { server.send($0) })
    }

    func testTheContextRefusesAKeyThatIsNotTheCertificates() throws {
        let otherKey = Self.directory.appendingPathComponent("other-key.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", otherKey]
        try openssl.run()
        openssl.waitUntilExit()
        XCTAssertThrowsError(try TLSContext(certificateFile: Self.certificate, keyFile: otherKey)) { error in
            XCTAssertTrue("\(error)".contains("is not the key of the certificate"), "\(error)")
        }
        XCTAssertThrowsError(try TLSContext(certificateFile: Self.key, keyFile: Self.key)) { error in
            XCTAssertTrue("\(error)".contains("holds no PEM certificate"), "\(error)")
        }
    }

    func testTheContextRefusesACertificateNotValidAtTheTime() throws {
        XCTAssertNoThrow(try TLSContext(certificateFile: Self.certificate, keyFile: Self.key))
        XCTAssertThrowsError(try TLSContext(certificateFile: Self.certificate, keyFile: Self.key, now: Date().addingTimeInterval(3 * 86_400))) { error in
            XCTAssertTrue("\(error)".contains("expired on"), "\(error)")
        }
        XCTAssertThrowsError(try TLSContext(certificateFile: Self.certificate, keyFile: Self.key, now: Date().addingTimeInterval(-86_400))) { error in
            XCTAssertTrue("\(error)".contains("is not valid before"), "\(error)")
        }
    }
}
