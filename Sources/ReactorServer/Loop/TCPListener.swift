import CUV

/// A listening TCP socket on the loop; hands each accepted connection to `onAccept`.
public final class TCPListener {
    private let listening: LoopHandle<uv_tcp_t>
    private var handle: UnsafeMutablePointer<uv_tcp_t> { listening.pointer }
    private let loop: EventLoop
    private let onAccept: (TCPConnection) -> Void
    /// Told when a connection could not be accepted (libuv's error code: out of file descriptors,
    /// `UV_EMFILE`, most often); libuv closes it, and the listener goes on.
    public var onAcceptError: ((Int32) -> Void)?
    /// The port actually bound (useful with port 0, which asks the system for a free one).
    public private(set) var port: Int = 0

    /// Binds `host` (an IPv4 or IPv6 literal) and `port`, and starts listening. Call on the loop thread.
    public init(loop: EventLoop, host: String, port: Int, backlog: Int32 = 1024, onAccept: @escaping (TCPConnection) -> Void) throws(UVError) {
        precondition(loop.isCurrent)
        self.loop = loop
        self.onAccept = onAccept
        listening = try LoopHandle("uv_tcp_init") { uv_tcp_init(loop.loop, $0) }
        listening.attach(to: self)

        var storage = sockaddr_storage()
        try withUnsafeMutableBytes(of: &storage) { raw throws(UVError) in
            if host.contains(":") {
                try UVError.check(uv_ip6_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)), "address \(host)")
            } else {
                try UVError.check(uv_ip4_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)), "address \(host)")
            }
        }
        do {
            try withUnsafePointer(to: &storage) { pointer throws(UVError) in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(UVError) in
                    try UVError.check(uv_tcp_bind(handle, address, 0), "bind \(host):\(port)")
                }
            }
            try UVError.check(uv_listen(handle.stream, backlog) { server, status in
                guard let server else { return }
                let listener = LoopHandle<uv_stream_t>.owner(of: server, as: TCPListener.self)
                guard status == 0 else { return listener.onAcceptError?(status) ?? () }
                listener.acceptOne()
            }, "listen \(host):\(port)")
        } catch {
            close()
            throw error
        }
        self.port = boundPort()
    }

    /// Stops listening; connections already accepted stay open.
    public func close() {
        listening.close()
    }

    private func acceptOne() {
        let client = TCPConnection.makeHandle(loop: loop)
        let status = uv_accept(handle.stream, client.stream)
        guard status == 0 else {
            uv_close(client.handle) { closed in closed?.deallocate() }
            onAcceptError?(status)
            return
        }
        uv_tcp_nodelay(client, 1)
        onAccept(TCPConnection(loop: loop, handle: client))
    }

    private func boundPort() -> Int {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) }
        }
        guard status == 0 else { return 0 }
        return withUnsafeBytes(of: &storage) { raw in
            // sin_port and sin6_port sit at the same offset, in network byte order.
            Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        }
    }
}

extension UnsafeMutablePointer where Pointee == uv_tcp_t {
    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: uv_stream_t.self) }
    var handle: UnsafeMutablePointer<uv_handle_t> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: uv_handle_t.self) }
}
