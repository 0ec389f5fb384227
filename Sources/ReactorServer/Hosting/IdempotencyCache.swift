
/// Remembers the answers to requests that carried an `Idempotency-Key`, so that a retry within the
/// window gets the first answer and applies nothing twice.
///
/// Keys are per client (token name), so clients cannot collide or replay each other's answers, and
/// each client has the whole capacity to itself: one client's keys never push out another's.
/// Entries expire in insertion order, which is also expiry order: a FIFO prunes them cheaply. A key
/// forgotten early (an answer not remembered) leaves its record in the FIFO; each entry knows its
/// own expiry, so such a record never removes a later entry of the same key, and the FIFO is kept
/// within twice the capacity.
final class IdempotencyCache {
    enum Admission {
        /// First use of the key: go ahead, then `finish`.
        case proceed
        /// A retry of a finished request: send this again.
        case replay(HTTPResponse)
        case reject(Problem)
    }

    private enum State {
        case inFlight(fingerprint: String)
        case done(fingerprint: String, response: HTTPResponse)
    }

    private struct Entry {
        var state: State
        /// When the key's FIFO record comes due: only that record removes this entry.
        let expiresAt: UInt64
    }

    /// One client's keys.
    private struct Partition {
        var entries: [String: Entry] = [:]
        var expiries = FIFO<(key: String, at: UInt64)>()

        mutating func insert(_ key: String, _ state: State, expiresAt: UInt64, capacity: Int) {
            entries[key] = Entry(state: state, expiresAt: expiresAt)
            expiries.append((key, expiresAt))
            // The oldest go first past the capacity, and past twice it in the FIFO (records of keys
            // forgotten early count there until they come due).
            while entries.count > capacity || expiries.count > 2 * capacity, let oldest = expiries.popFirst() { remove(oldest) }
        }

        /// Removes the entry `record` was made for, not a later one of the same key.
        mutating func remove(_ record: (key: String, at: UInt64)) {
            if entries[record.key]?.expiresAt == record.at { entries[record.key] = nil }
        }

        mutating func expire(now: UInt64) {
            while let oldest = expiries.first, oldest.at <= now {
                _ = expiries.popFirst()
                remove(oldest)
            }
        }
    }

    private var partitions: [Substring: Partition] = [:]
    private let window: UInt64
    private let capacity: Int

    init(windowSeconds: Double, capacity: Int) {
        window = milliseconds(seconds: windowSeconds)
        self.capacity = capacity
    }

    /// The longest key taken: one is kept for the whole window, by the thousand, and is an id (a
    /// UUID is 36 bytes), not a payload.
    static let maximumKeyBytes = 255

    /// The client, a NUL, the key: `JournaledAnswer.client(ofScopedKey:)` reads the client back.
    static func scopedKey(_ key: String, client: String?) -> String {
        (client ?? "") + "\u{0}" + key
    }

    /// The same in every process, so that a cluster's other servers and this one after a restart
    /// (a `Hasher`'s is not): SHA-1 of method, target and body.
    static func fingerprint(of request: HTTPRequest) -> String {
        RedisStreamLog.sha1Hex(Array("\(request.method.name) \(request.target)\n".utf8) + request.body)
    }

    func admit(_ key: String, displayKey: String, fingerprint: String, now: UInt64) -> Admission {
        let client = JournaledAnswer.client(ofScopedKey: key)
        partitions[client, default: Partition()].expire(now: now)
        switch partitions[client]?.entries[key]?.state {
        case nil:
            partitions[client, default: Partition()].insert(key, .inFlight(fingerprint: fingerprint), expiresAt: now + window, capacity: capacity)
            return .proceed
        case .inFlight(let first):
            return first == fingerprint ? .reject(.idempotentRequestInProgress(displayKey)) : .reject(.idempotencyKeyReused(displayKey))
        case .done(let first, let response):
            return first == fingerprint ? .replay(response) : .reject(.idempotencyKeyReused(displayKey))
        }
    }

    /// Records the answer. Server errors are forgotten instead, so a retry tries again.
    func finish(_ key: String, fingerprint: String, response: HTTPResponse) {
        let client = JournaledAnswer.client(ofScopedKey: key)
        guard let entry = partitions[client]?.entries[key], case .inFlight = entry.state else { return }
        partitions[client]?.entries[key] = Self.remembers(response.status.code)
            ? Entry(state: .done(fingerprint: fingerprint, response: response), expiresAt: entry.expiresAt) : nil
    }

    /// Takes back an answer given before a restart, for the rest of its window.
    func restore(_ key: String, fingerprint: String, response: HTTPResponse, expiresIn milliseconds: UInt64, now: UInt64) {
        partitions[JournaledAnswer.client(ofScopedKey: key), default: Partition()].insert(key, .done(fingerprint: fingerprint, response: response),
                                                                      expiresAt: now + min(milliseconds, window), capacity: capacity)
    }

    /// Drops an in-flight key without an answer (another server of a cluster holds it).
    func forget(_ key: String) {
        let client = JournaledAnswer.client(ofScopedKey: key)
        if let entry = partitions[client]?.entries[key], case .inFlight = entry.state { partitions[client]?.entries[key] = nil }
    }

    /// The number of keys held, and of records in the FIFOs, for tests.
    var count: Int { partitions.values.reduce(0) { $0 + $1.entries.count } }
    var recordCount: Int { partitions.values.reduce(0) { $0 + $1.expiries.count } }

    /// Answers to requests refused before they were carried out (malformed, wrong media type, too
    /// large, over a rate limit) and server errors are not kept: fixed or later, the same key may go
    /// through. Only the outcome of applying the events is remembered.
    static func remembers(_ status: Int) -> Bool {
        status < 500 && ![400, 413, 415, 429].contains(status)
    }

    /// The answers a key can hold, for a replay that has only the code (from a cluster's Redis).
    static let rememberedStatuses: [HTTPStatus] = [.ok, .conflict, .unprocessableContent, .forbidden, .notFound, .gone]

    /// How long a cluster holds a key for a request still being carried out (then for the window).
    static let sharedClaimMilliseconds: UInt64 = 30_000

}

/// A FIFO over an array with a moving head.
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var first: Element? { head < storage.count ? storage[head] : nil }

    var count: Int { storage.count - head }

    mutating func append(_ element: Element) { storage.append(element) }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head > 1024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}
