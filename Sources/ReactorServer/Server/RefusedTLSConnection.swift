/// A TLS connection the server will not serve (too many connections, or too many new ones per
/// second). Its refusal can only go out once the handshake is done, so it answers whatever the
/// client sends first, then closes; a client that never finishes the handshake is closed at the
/// request timeout. The server answers at most `HTTPServer.maxTLSRefusals` of them at a time.
final class RefusedTLSConnection: TCPConnectionDelegate {
    private let answer: (TCPConnection) -> Void
    private let closed: () -> Void
    private var timer: LoopTimer?
    private var answered = false

    /// Owned by `tcp` (its delegate) until it closes; `closed` is called then.
    @discardableResult
    init(tcp: TCPConnection, loop: EventLoop, timeoutMilliseconds: UInt64, answer: @escaping (TCPConnection) -> Void, closed: @escaping () -> Void) {
        self.answer = answer
        self.closed = closed
        super.init()
        let timer = LoopTimer(loop: loop) { [unowned tcp] in tcp.close() }
        timer.start(after: timeoutMilliseconds)
        self.timer = timer
        tcp.delegate = self
        tcp.startReading()
    }

    override func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }
        answered = true
        answer(connection)
    }

    override func connectionDidEnd(_ connection: TCPConnection) {
        connection.close()
    }

    override func connectionDidClose(_ connection: TCPConnection) {
        timer = nil
        closed()
    }
}
