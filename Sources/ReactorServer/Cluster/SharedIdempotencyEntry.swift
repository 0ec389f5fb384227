import Synchronization

/// An idempotency key answered by the events an append carries: written with them in one step, so
/// that a retry finds the answer whenever the events went in, even if their node never heard so.
/// The append goes in only while the key still holds `claim`, this request's own: a claim that ran
/// out while the append was on its way, taken meanwhile by a retry on another node, fences it off.
public struct IdempotencyAnswer: Sendable, Equatable {
    /// The key in Redis's terms (hashed; see `ClusterKeys.idempotency`).
    public let key: String
    public let entry: SharedIdempotencyEntry
    public let milliseconds: UInt64
    /// The in-flight entry this request claimed the key with.
    public let claim: SharedIdempotencyEntry

    public init(key: String, entry: SharedIdempotencyEntry, milliseconds: UInt64, claim: SharedIdempotencyEntry) {
        self.key = key
        self.entry = entry
        self.milliseconds = milliseconds
        self.claim = claim
    }
}

/// An idempotency key as a cluster keeps it in Redis (`reactor:{cluster}:idem:<key>`), so that a
/// retry reaching another node gets the first answer too: `p <fingerprint> <claim>` while the first
/// request runs, then `d <fingerprint> <status> <body>` once it is answered. The fingerprint is the
/// same on every node (SHA-1 of method, target and body); the claim, made anew for each
/// request that claims the key, tells one claim from the next of a retry with the same fingerprint
/// (empty in a claim an older reactord made, which in turn cannot read one with a claim: a cluster
/// upgrades all its nodes together).
public enum SharedIdempotencyEntry: Equatable, Sendable {
    case inFlight(fingerprint: String, claim: String)
    case answered(fingerprint: String, status: Int, body: [UInt8])

    /// A claim of its own for a request with `fingerprint`: this process's random number, drawn once,
    /// and the count of claims it made before. Unique is all a claim must be (it is no secret), and
    /// a draw per request would cost a system call each.
    public static func newClaim(fingerprint: String) -> SharedIdempotencyEntry {
        let count = claimsMade.add(1, ordering: .relaxed).newValue
        let bytes = withUnsafeBytes(of: (processNonce, count.bigEndian)) { Array($0) }
        return .inFlight(fingerprint: fingerprint, claim: HexDigits.lowercase(bytes))
    }
    private static let processNonce = UInt64.random(in: .min ... .max)
    private static let claimsMade = Atomic<UInt64>(0)

    public var fingerprint: String {
        switch self {
        case .inFlight(let fingerprint, _), .answered(let fingerprint, _, _): return fingerprint
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .inFlight(let fingerprint, let claim):
            return Array((claim.isEmpty ? "p \(fingerprint)" : "p \(fingerprint) \(claim)").utf8)
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
            self = .inFlight(fingerprint: fingerprint, claim: "")
        case (UInt8(ascii: "p")?, 3) where !parts[2].isEmpty:
            self = .inFlight(fingerprint: fingerprint, claim: String(decoding: parts[2], as: UTF8.self))
        case (UInt8(ascii: "d")?, 4):
            guard let status = Int(String(decoding: parts[2], as: UTF8.self)) else { return nil }
            self = .answered(fingerprint: fingerprint, status: status, body: Array(parts[3]))
        default:
            return nil
        }
    }
}
