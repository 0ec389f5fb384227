import Dispatch
import Foundation

/// A `Core` whose state lives in a reactord: a local copy of the server's state (or of the sub-tree at
/// `path`), kept in step over the network and decoded as `StateType`, so that app code written against
/// a local core reads the same: subscribers get the current state when they subscribe, then every
/// later one, and events are fired at it.
///
/// It connects as soon as it is created. The server sends a snapshot, then an RFC 6902 patch per
/// change, which are applied to a local JSON copy; each new copy is decoded once and shown to every
/// subscriber. When the connection drops it reconnects with exponential backoff and resumes with
/// `since=<version>`, so the server sends only what was missed. Events go to the server, which applies
/// them and sends the changes back as it does anyone else's.
///
/// Transports: a WebSocket on `GET /subscribe`, which also carries the fires; or, where Foundation
/// cannot open a WebSocket (swift-corelibs-foundation on a libcurl built without them, as on Debian
/// 12), Server-Sent Events on `GET /stream`, with fires as `POST /events` (see `TransportPreference`).
///
/// Threads: its state is confined to a private serial queue, where none of the app's code runs, so it
/// can be read and fired at from any thread. Subscribers and fire completions run on
/// `options.notificationQueue` (by default another private serial queue, never the main queue), or on
/// the queue given when subscribing.
///
/// @unchecked Sendable: every `var` is touched only on `queue`; everything else is a `let`.
public final class RemoteCore<StateType: Decodable & Sendable>: @unchecked Sendable {
    /// The server's base URL, such as `http://127.0.0.1:7070`.
    public let url: URL
    /// The sub-tree followed: `StateType` decodes from the value there (`null` while there is none).
    public let path: JSONPointer
    public let options: RemoteCoreOptions

    let queue = DispatchQueue(label: "ReactorClient.RemoteCore")
    let notificationQueue: DispatchQueue
    let endpoints: RemoteEndpoints

    // The local copy, as of the last message applied.
    var document: JSON?
    var documentVersion: UInt64?
    /// The history `documentVersion` belongs to, as the last snapshot named it: sent back with it on
    /// resuming, so that a server that started over sends a snapshot.
    var documentHistory: String?
    // The last copy that decoded, and why a later one did not.
    var decoded: (version: UInt64, state: StateType)?
    var decodingFailure: (version: UInt64, error: any Error)?

    var observers: [StateObserver<StateType>] = []
    var statusContinuations: [UInt64: AsyncStream<ConnectionStatus>.Continuation] = [:]
    var lastRegistration: UInt64 = 0

    var currentStatus = ConnectionStatus.connecting
    var currentCounts = ConnectionCounts()
    /// The transport to use from now on; nil until one opened (or the automatic choice fell back).
    var chosenTransport: RemoteTransport?
    var connection: (any RemoteConnection)?
    /// Counts connections and stops: what a connection or timer reports is ignored once it changed.
    var generation: UInt64 = 0
    var failedAttempts = 0
    /// The local copy cannot be resumed from (a patch did not apply): the next connection asks for a snapshot.
    var needsSnapshot = false

    var outbox: [PendingFire] = []
    var awaitingAnswer: [String: PendingFire] = [:]
    var lastFireID: UInt64 = 0

    /// - Parameters:
    ///   - url: the server's base URL, `http://` or `https://` (a path prefix, a reverse proxy's, is kept).
    ///   - token: a bearer token, for a server with tokens configured: it needs the `read` scope, and
    ///     `fire` to fire.
    ///   - path: a JSON Pointer to follow only that sub-tree of the server's state.
    public init(url: URL, token: String? = nil, path: JSONPointer = .root, options: RemoteCoreOptions = RemoteCoreOptions()) {
        precondition(["http", "https"].contains(url.scheme?.lowercased()), "reactord's URL is http:// or https://, not \(url)")
        self.url = url
        self.path = path
        self.options = options
        notificationQueue = options.notificationQueue ?? DispatchQueue(label: "ReactorClient.RemoteCore.notifications")
        endpoints = RemoteEndpoints(base: url, token: token, path: path)
        queue.async { [weak self] in self?.connect() }
    }

    deinit {
        // Nobody else holds the remote core any more, so its state is ours to touch here.
        connection?.cancel()
        failFires(with: RemoteCoreError.closed)
        finishObservers(with: .closed)
    }

    /// Disconnects for good: fires still waiting fail with `RemoteCoreError.closed`, `statuses()` and
    /// `states()` streams end, and subscribers get nothing more.
    public func close() {
        queue.sync { stop(.closed) }
    }

    // MARK: Reading

    /// The last state received and decoded; nil until the first snapshot arrives.
    public var state: StateType? { queue.sync { decoded?.state } }

    /// The version of `state` (the server's version, as in `GET /state`'s ETag); nil until the first snapshot.
    public var version: UInt64? { queue.sync { decoded?.version } }

    /// `state` with its version, read together.
    public func snapshot() -> (version: UInt64, state: StateType)? {
        queue.sync { decoded }
    }

    /// The local JSON copy with its version. It is ahead of `state` when the latest copy did not
    /// decode as `StateType` (see `decodingError`).
    public var json: (version: UInt64, value: JSON)? {
        queue.sync { documentVersion.flatMap { version in document.map { (version, $0) } } }
    }

    /// Why the local copy did not decode as `StateType`; nil when `state` is up to date with it.
    /// Subscribers are not notified of a copy that does not decode; they get the next one that does.
    public var decodingError: (any Error)? {
        queue.sync { decodingFailure?.error }
    }

    public var status: ConnectionStatus { queue.sync { currentStatus } }

    /// How often it connected and started over from a snapshot.
    public var counts: ConnectionCounts { queue.sync { currentCounts } }
}
