/// An idempotency key answered by the events an append carries: written with them in one step, so
/// that a retry finds the answer whenever the events went in, even if their node never heard so.
public struct IdempotencyAnswer: Sendable, Equatable {
    /// The key in Redis's terms (hashed; see `ClusterKeys.idempotency`).
    public let key: String
    public let entry: SharedIdempotencyEntry
    public let milliseconds: UInt64

    public init(key: String, entry: SharedIdempotencyEntry, milliseconds: UInt64) {
        self.key = key
        self.entry = entry
        self.milliseconds = milliseconds
    }
}

/// An idempotency key as a cluster keeps it in Redis (`reactor:{cluster}:idem:<key>`), so that a
/// retry reaching another node gets the first answer too: `p <fingerprint>` while the first request
/// runs, then `d <fingerprint> <status> <body>` once it is answered. The fingerprint is the same on
/// every node (SHA-1 of method, target and body).
public enum SharedIdempotencyEntry: Equatable, Sendable {
    case inFlight(fingerprint: String)
    case answered(fingerprint: String, status: Int, body: [UInt8])

    public var fingerprint: String {
        switch self {
        case .inFlight(let fingerprint), .answered(let fingerprint, _, _): return fingerprint
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .inFlight(let fingerprint):
            return Array("p \(fingerprint)".utf8)
        case .answered(let fingerprint, let status, let body):
            return Array("d \(fingerprint) \(status) ".utf8) + body
        }
    }

    public init?(bytes: [UInt8]) {
        let space = UInt8(ascii: " ")
        let parts = bytes.split(separator: space, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return nil }
        let fingerprint = String(decoding: parts[1], as: UTF8.self)
        switch (parts[0].first, parts.count) {
        case (UInt8(ascii: "p")?, 2):
            self = .inFlight(fingerprint: fingerprint)
        case (UInt8(ascii: "d")?, 4):
            guard let status = Int(String(decoding: parts[2], as: UTF8.self)) else { return nil }
            self = .answered(fingerprint: fingerprint, status: status, body: Array(parts[3]))
        default:
            return nil
        }
    }
}
