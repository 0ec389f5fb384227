import CUV

/// Fires events with POST /events on one keep-alive HTTP/1.1 connection, one request at a time,
/// and reads each `{"version":N}` answer.
final class EventFirer: ClientSocket {
    private(set) var isConnected = false
    private(set) var isBusy = false
    private var response: [UInt8] = []
    private let body: (Int) -> String
    private var fired = 0

    static let headEnd = Array("\r\n\r\n".utf8)
    static let contentLength = Array("content-length:".utf8)
    static let versionKey = Array("\"version\":".utf8)

    /// `body(i)` is the JSON of the `i`th event.
    init(bench: Bench, body: @escaping (Int) -> String) {
        self.body = body
        super.init(bench: bench)
    }

    func start() { connect(port: bench.options.port) }

    override func didConnect(status: Int32) {
        guard status == 0 else {
            bench.firerFailed("connect: \(String(cString: uv_err_name(status)))")
            return
        }
        isConnected = true
        bench.pump()
    }

    /// Sends one event; `bench.answered(version:)` follows.
    func send() {
        precondition(isConnected && !isBusy)
        isBusy = true
        let body = body(fired)
        fired += 1
        write(Array(("POST /events HTTP/1.1\r\nHost: 127.0.0.1:\(bench.options.port)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n" + body).utf8))
    }

    override func didRead(_ bytes: UnsafeRawBufferPointer) {
        response.append(contentsOf: bytes)
        while true {
            let parsed = response.withUnsafeBytes { raw -> (used: Int, status: Int, version: UInt64?, text: String)? in
                guard let end = find(Self.headEnd, in: raw) else { return nil }
                let head = UnsafeRawBufferPointer(rebasing: raw[..<end])
                let lowered = head.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
                let length = lowered.withUnsafeBytes { lower -> Int in
                    guard let at = find(Self.contentLength, in: lower) else { return 0 }
                    return Int(decimal(in: lower, at: at + Self.contentLength.count) ?? 0)
                }
                guard raw.count >= end + 4 + length else { return nil }
                let status = head.count >= 12 ? Int(decimal(in: head, at: 9) ?? 0) : 0
                let body = UnsafeRawBufferPointer(rebasing: raw[(end + 4)..<(end + 4 + length)])
                let version = find(Self.versionKey, in: body).flatMap { decimal(in: body, at: $0 + Self.versionKey.count) }
                return (end + 4 + length, status, version, String(decoding: body.prefix(200), as: UTF8.self))
            }
            guard let parsed else { return }
            response.removeFirst(parsed.used)
            isBusy = false
            if parsed.status == 200, let version = parsed.version {
                bench.answered(version: version)
            } else {
                bench.firerFailed("POST /events answered \(parsed.status): \(parsed.text)")
                return
            }
        }
    }

    override func didEnd(error: String?) {
        close()
        bench.firerFailed(error ?? "the server closed the HTTP connection")
    }
}
