import CUV

/// A TCP client connection on the bench's loop. Subclasses override the `did...` methods.
///
/// libuv reaches the object through `handle.pointee.data` (unretained: the bench keeps every
/// socket alive until the loop is done).
class ClientSocket {
    let handle: UnsafeMutablePointer<uv_tcp_t>
    unowned(unsafe) let bench: Bench
    private(set) var isClosed = false
    private let connectRequest = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)

    init(bench: Bench) {
        self.bench = bench
        handle = .allocate(capacity: 1)
        uv_tcp_init(bench.loop, handle)
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        connectRequest.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        connectRequest.deallocate()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }

    /// Connects to 127.0.0.1:`port`; `didConnect` follows.
    func connect(port: Int) {
        var address = sockaddr_in()
        uv_ip4_addr("127.0.0.1", Int32(port), &address)
        let status = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                uv_tcp_connect(connectRequest, handle, address) { request, status in
                    let socket = Unmanaged<ClientSocket>.fromOpaque(request!.pointee.data).takeUnretainedValue()
                    guard !socket.isClosed else { return }
                    if status == 0 {
                        uv_tcp_nodelay(socket.handle, 1)
                        socket.startReading()
                    }
                    socket.didConnect(status: status)
                }
            }
        }
        if status < 0 { didConnect(status: status) }
    }

    private func startReading() {
        uv_read_start(stream, { handle, _, buffer in
            let socket = Unmanaged<ClientSocket>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            let shared = socket.bench.readBuffer
            buffer!.pointee = uv_buf_init(shared.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(shared.count))
        }, { stream, count, buffer in
            let socket = Unmanaged<ClientSocket>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            if count > 0 {
                socket.didRead(UnsafeRawBufferPointer(start: buffer!.pointee.base, count: count))
            } else if count < 0 {
                socket.didEnd(error: count == Int(UV_EOF.rawValue) ? nil : String(cString: uv_err_name(Int32(count))))
            }
        })
    }

    /// Writes a copy of `bytes` (the writes here are rare: a handshake, a pong, a request).
    func write(_ bytes: [UInt8]) {
        guard !isClosed, !isClosing, !bytes.isEmpty else { return }
        var offset = 0
        let written = bytes.withUnsafeBytes { raw -> Int32 in
            var buffer = uv_buf_init(UnsafeMutablePointer(mutating: raw.baseAddress!.assumingMemoryBound(to: CChar.self)), UInt32(raw.count))
            return uv_try_write(stream, &buffer, 1)
        }
        if written == Int32(bytes.count) { return }
        if written > 0 { offset = Int(written) } else if written != Int32(UV_EAGAIN.rawValue) {
            didEnd(error: String(cString: uv_err_name(written)))
            return
        }
        let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count - offset, alignment: 1)
        bytes[offset...].withUnsafeBytes { storage.copyMemory(from: $0) }
        request.pointee.data = storage.baseAddress
        var buffer = uv_buf_init(storage.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(storage.count))
        let status = uv_write(request, stream, &buffer, 1) { request, _ in
            request!.pointee.data!.deallocate()
            request!.deallocate()
        }
        if status < 0 {
            storage.deallocate()
            request.deallocate()
        }
    }

    var isClosing: Bool { uv_is_closing(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) != 0 }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        guard !isClosing else { return }
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
    }

    // MARK: For subclasses

    func didConnect(status: Int32) {}
    func didRead(_ bytes: UnsafeRawBufferPointer) {}
    /// The peer closed (error nil) or the connection failed.
    func didEnd(error: String?) {}
}

/// Finds `needle` in `haystack` from `start`; the index of its first byte.
func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
    guard needle.count <= haystack.count, start <= haystack.count - needle.count else { return nil }
    let first = needle[0]
    var i = start
    let last = haystack.count - needle.count
    while i <= last {
        if haystack[i] == first {
            var j = 1
            while j < needle.count && haystack[i + j] == needle[j] { j += 1 }
            if j == needle.count { return i }
        }
        i += 1
    }
    return nil
}

/// The decimal number at `index` (after optional spaces), or nil.
func decimal(in bytes: UnsafeRawBufferPointer, at index: Int) -> UInt64? {
    var i = index
    while i < bytes.count && bytes[i] == UInt8(ascii: " ") { i += 1 }
    var value: UInt64 = 0
    var digits = 0
    while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
        value = value &* 10 &+ UInt64(bytes[i] - UInt8(ascii: "0"))
        digits += 1
        i += 1
    }
    return digits > 0 ? value : nil
}
