import ArgumentParser
import Foundation
import Logging
import ReactorServer

/// reactord: one shared JSON document on the network, and the tools for its data directory.
struct Reactord: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reactord",
        abstract: "Serves one shared state: events in over HTTP, state out.",
        subcommands: [Serve.self, Check.self, Compact.self, Repair.self, Export.self, Import.self, Config.self],
        defaultSubcommand: Serve.self
    )
}

/// `reactord [serve]`: the server.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serves the state (the default command).",
        discussion: """
            Settings come from a JSON config file (--config), then REACTORD_* environment variables, \
            then flags, each overriding the one before. See docs/configuration.md.
            """
    )

    @Option(help: "Address to listen on, IPv4 or IPv6 (default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (default 7070).")
    var port: Int?

    @Option(name: .customLong("token"), help: "A bearer token, name:secret:scopes[:event-types] (scopes: read, fire, admin, joined by +). Repeatable.")
    var tokens: [String] = []

    @Option(help: "A JSON config file.")
    var config: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (default info).")
    var logLevel: Logger.Level?

    @Option(help: "A JSON file holding the initial state (default {}).")
    var initialState: String?

    @Flag(help: "Without tokens: allow serving a non-loopback address, and answer requests for any Host name (otherwise only loopback names).")
    var insecure = false

    @Option(name: .customLong("cors-origin"), help: "An origin allowed to call the API from a browser, or *. Repeatable.")
    var corsOrigins: [String] = []

    @Option(help: "Most connections at once; more are answered 503 (default 10000).")
    var maxConnections: Int?

    @Option(help: "Seconds a request may take to arrive whole (default 10).")
    var requestTimeout: Double?

    @Option(help: "Seconds an idle keep-alive connection is kept (default 60).")
    var idleTimeout: Double?

    @Option(help: "Largest request body in bytes (default 1048576).")
    var maxBodyBytes: Int?

    @Option(help: "Largest request head (request line and headers) in bytes (default 16384).")
    var maxHeaderBytes: Int?

    @Option(help: "Recent transitions kept for subscribers that resume with since=N (default 1024).")
    var resumeWindow: Int?

    @Option(help: "Seconds an Idempotency-Key's answer is remembered for retries (default 300).")
    var idempotencyWindow: Double?

    @Option(help: "Most Idempotency-Key answers remembered at once for each token, the oldest forgotten first (default 10000).")
    var idempotencyKeys: Int?

    @Option(help: "Bytes a subscriber may leave unsent before the slow-consumer policy applies (default 1048576).")
    var maxUnsentBytes: Int?

    @Option(help: "What happens to a slow subscriber: snapshot (drop its patches, send a snapshot once it drains) or close (code 4008).")
    var slowConsumer: SlowConsumerPolicy?

    @Option(help: "Seconds of silence before a WebSocket peer is pinged (default 30).")
    var pingInterval: Double?

    @Option(help: "Largest WebSocket message a client may send, in bytes (default 1048576).")
    var maxMessageBytes: Int?

    @Option(name: .customLong("websocket-origin"), help: "An Origin allowed to open a WebSocket (repeatable; default: any with tokens, the server's own and --cors-origin without).")
    var webSocketOrigins: [String] = []

    @Flag(name: .customLong("no-websocket-compression"), help: "Never agree to permessage-deflate, even when a WebSocket client offers it.")
    var noWebSocketCompression = false

    @Option(help: "Messages shorter than this many bytes go out uncompressed when compressed on their own (not in a selection's shared stream; default 256).")
    var compressionMinBytes: Int?

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain: serve HTTPS and wss:// (with --tls-key). SIGHUP reloads it.")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(name: .customLong("tls-port"), help: "Serve TLS on this port beside plain HTTP on --port (default: TLS only, on --port).")
    var tlsPort: Int?

    @Flag(name: .customLong("websocket-echo"), help: "Serve /echo, a WebSocket echo endpoint for conformance tests. Never in production.")
    var webSocketEcho = false

    @Option(help: "Directory of the journal and snapshots; without one the state lives in memory only.")
    var dataDir: String?

    @Option(help: "When the journal fsyncs before acknowledging: always, batch (group commit; default) or never.")
    var fsync: FsyncPolicy?

    @Option(help: "Write a snapshot after this many events (default 100000).")
    var snapshotEvents: Int?

    @Option(help: "Write a snapshot after this many journal bytes (default 67108864).")
    var snapshotBytes: Int?

    @Option(help: "Start a new journal segment past this size in bytes (default 16777216).")
    var segmentBytes: Int?

    @Option(help: "Where the dashboard and docs/openapi.yaml are (default: the installation's share/reactord, or the source tree).")
    var shareDir: String?

    @Option(help: "Join a cluster whose shared log is in this Redis, redis://HOST:PORT, or redis://[USER]:PASSWORD@HOST:PORT for a Redis that asks for credentials: every node of the cluster serves one state (docs/cluster.md). Not with --data-dir.")
    var redis: String?

    @Option(help: "The cluster's name: its keys in Redis are reactor:{NAME}:... (default reactor).")
    var redisKey: String?

    @Option(help: "This node's name in the cluster (default: host name and process id).")
    var nodeName: String?

    @Option(help: "Seconds Redis may take to answer before this node counts it unreachable (default 2).")
    var redisTimeout: Double?

    @Option(help: "Replicas of the Redis primary that must confirm each append (WAIT) before it is acknowledged (default 0).")
    var redisWaitReplicas: Int?

    @Option(help: "Events per second each token may fire, unless its config entry says otherwise (default: no limit).")
    var eventRateLimit: Double?

    @Option(help: "Events a token may fire in a burst above its rate (default: the rate).")
    var eventRateBurst: Double?

    @Option(help: "New connections per second the server accepts, bursts up to twice that (default: no limit).")
    var maxConnectionRate: Double?

    func run() throws {
        var fileSettings = Settings()
        var unknownKeys: [String] = []
        do {
            if let config { (fileSettings, unknownKeys) = try Settings.file(config) }
            let settings = try flagSettings().resolved(over: Settings.environment().resolved(over: fileSettings))
            let server = try settings.serverConfiguration()
            try serve(settings, server, unknownKeys: unknownKeys, exposesTokens: config.map { fileSettings.tokens?.isEmpty == false && Settings.isReadableByOthers($0) } ?? false)
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
    }

    private func flagSettings() throws(ConfigurationError) -> Settings {
        var settings = Settings()
        settings.host = host
        settings.port = port
        if !tokens.isEmpty { settings.tokens = try tokens.map { spec throws(ConfigurationError) in try AccessToken(parsing: spec) } }
        settings.logLevel = logLevel
        settings.initialState = initialState
        settings.insecure = insecure ? true : nil
        settings.corsOrigins = corsOrigins.isEmpty ? nil : corsOrigins
        settings.maxConnections = maxConnections
        settings.requestTimeout = requestTimeout
        settings.idleTimeout = idleTimeout
        settings.maxBodyBytes = maxBodyBytes
        settings.maxHeaderBytes = maxHeaderBytes
        settings.resumeWindow = resumeWindow
        settings.idempotencyWindow = idempotencyWindow
        settings.idempotencyKeys = idempotencyKeys
        settings.maxUnsentBytes = maxUnsentBytes
        settings.slowConsumer = slowConsumer
        settings.pingInterval = pingInterval
        settings.maxMessageBytes = maxMessageBytes
        settings.webSocketOrigins = webSocketOrigins.isEmpty ? nil : webSocketOrigins
        settings.webSocketEcho = webSocketEcho ? true : nil
        settings.webSocketCompression = noWebSocketCompression ? false : nil
        settings.compressionMinBytes = compressionMinBytes
        settings.tlsCert = tlsCert
        settings.tlsKey = tlsKey
        settings.tlsPort = tlsPort
        settings.dataDir = dataDir
        settings.fsync = fsync
        settings.snapshotEvents = snapshotEvents
        settings.snapshotBytes = snapshotBytes
        settings.segmentBytes = segmentBytes
        settings.eventRateLimit = eventRateLimit
        settings.eventRateBurst = eventRateBurst
        settings.maxConnectionRate = maxConnectionRate
        settings.redis = redis
        settings.redisKey = redisKey
        settings.nodeName = nodeName
        settings.redisTimeout = redisTimeout
        settings.redisWaitReplicas = redisWaitReplicas
        return settings
    }

    /// Takes the soft open files limit up to the hard one (a descriptor per connection), and returns
    /// how many connections to take: `--max-connections`, or fewer, said in the log, when even the
    /// hard limit leaves too few descriptors for it. Past the limit the kernel could not hand a
    /// connection over at all; past the maximum it gets a `503`.
    private static func raiseOpenFilesLimit(toServe connections: Int, logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return connections }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        // The listeners, the journal's files, Redis's connections, the runtime's: a few dozen.
        let reserved: rlim_t = 64
        guard limit.rlim_cur < rlim_t(connections) + reserved else { return connections }
        let taken = Int(max(limit.rlim_cur, reserved + 1) - reserved)
        logger.warning("the open files limit leaves too few descriptors for --max-connections: connections past a lower maximum get a 503", metadata: [
            "limit": "\(limit.rlim_cur)", "max-connections": "\(connections)", "taken": "\(taken)",
            "hint": "raise LimitNOFILE (systemd) or ulimit -n to \(rlim_t(connections) + reserved) or more, or lower --max-connections",
        ])
        return taken
    }

    /// `exposesTokens`: the config file holds token secrets that other users may read.
    private func serve(_ settings: Settings, _ configuration: ServerConfiguration, unknownKeys: [String], exposesTokens: Bool) throws {
        let level = settings.logLevel ?? .info
        // A pipe nobody reads loses log lines rather than stopping the server.
        LogOutput.makeNonBlockingIfItCanStall()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "reactord")
        logger.logLevel = level
        // The lines of each request and event go to standard error as the handler above would write
        // them, but formatted by the server and written once per turn of its loop.
        var configuration = configuration
        configuration.routineLogLines = .standardError
        if let config, exposesTokens {
            logger.warning("the config file holds token secrets and other users may read it: chmod 600 it, or give the tokens through REACTORD_TOKENS", metadata: ["file": "\(config)"])
        }
        if !unknownKeys.isEmpty {
            logger.warning("unknown keys in the config file are ignored", metadata: ["keys": "\(unknownKeys.joined(separator: ", "))"])
        }
        let document = try initialDocument(settings.initialState)
        let tls = try loadTLS(configuration)
        configuration.maxConnections = Self.raiseOpenFilesLimit(toServe: configuration.maxConnections, logger: logger)
        let daemon = try Daemon(logger: logger)
        var files = StaticFiles()
        if let share = Assets.shareDirectory(shareDir) {
            do {
                files = try Assets.load(from: share)
            } catch {
                throw CommandFailure("cannot load the dashboard and API description: \(error)")
            }
        } else {
            logger.warning("the dashboard is not installed: / and /openapi.json are not served (see --share-dir)")
        }
        var createdDirectory: NewDataDirectory?
        let server: StateServer<JSONDocument>
        let cluster: RedisStreamLog.Options?
        do { cluster = try settings.cluster() } catch { throw ValidationError(error.description) }
        if let cluster {
            let joined: ClusterBootstrap.Joined<JSONDocument>
            do {
                joined = try ClusterBootstrap.join(cluster, initialState: document, leaving: configuration.resumeWindow, logger: logger)
            } catch {
                throw CommandFailure("cannot join the cluster \(cluster.cluster) at redis://\(cluster.host):\(cluster.port): \(error)")
            }
            let log = RedisStreamLog(loop: daemon.loop, options: cluster, epoch: joined.epoch, version: joined.version, head: joined.head,
                                     snapshotVersion: joined.snapshotVersion, logger: logger)
            let storage: StorageConfiguration
            do { storage = try settings.snapshotIntervals() } catch { throw ValidationError(error.description) }
            server = StateServer.document(loop: daemon.loop, state: joined.state, version: joined.version, configuration: configuration,
                                          log: log, storage: storage, files: files, tls: tls, logger: logger)
            log.start()
        } else if let (directory, options, storage) = try storage(settings) {
            createdDirectory = NewDataDirectory(path: directory)
            let opened: (log: FileEventLog, state: JSONDocument, version: UInt64)
            do {
                opened = try StateServer.openStorage(DataDirectory(path: directory), initialState: document, loop: daemon.loop, options: options, logger: logger)
            } catch {
                throw CommandFailure("cannot open the data directory \(directory): \(error)")
            }
            if settings.initialState != nil && opened.version > 0 {
                logger.notice("the data directory holds a state already: --initial-state is not used", metadata: ["version": "\(opened.version)"])
            }
            server = StateServer.document(loop: daemon.loop, state: opened.state, version: opened.version, configuration: configuration,
                                          log: opened.log, storage: storage, files: files, tls: tls, logger: logger)
        } else {
            logger.warning("no data directory: the state is kept in memory only and lost when reactord stops (see --data-dir)")
            server = StateServer.document(loop: daemon.loop, state: document, configuration: configuration, files: files, tls: tls, logger: logger)
        }
        do {
            try server.start()
        } catch {
            // A start that fails leaves no data directory behind that it made.
            createdDirectory?.remove()
            throw CommandFailure("cannot listen on \(configuration.host):\(configuration.port): \(error)")
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        var listening: Logger.Metadata = [
            "address": "\(host):\(server.http.port)",
            "tokens": "\(configuration.tokens.map(\.name).joined(separator: ","))",
        ]
        if let tls {
            if let tlsPort = server.http.tlsPort { listening["tls"] = "\(host):\(tlsPort)" } else { listening["tls"] = "\(host):\(server.http.port)" }
            listening["certificate"] = "\(tls.subject), valid until \(tls.notAfter)"
        }
        logger.notice("listening", metadata: listening)
        let reload = {
            guard tls != nil else { return logger.notice("SIGHUP: nothing to reload (no TLS certificate is configured)") }
            do {
                let renewed = try TLSContext(certificateFile: configuration.tlsCertificateFile!, keyFile: configuration.tlsKeyFile!)
                server.http.replaceTLSContext(renewed)
                logger.notice("TLS certificate reloaded: new connections use it", metadata: ["certificate": "\(renewed.subject), valid until \(renewed.notAfter)"])
            } catch {
                logger.error("TLS certificate not reloaded: connections keep using the one loaded before", metadata: ["error": "\(error)"])
            }
        }
        try daemon.run(reload: reload) { completion in server.shutdown(completion: completion) }
        logger.notice("stopped", metadata: ["version": "\(server.publishedVersion)"])
    }

    /// The certificate and key, checked before anything listens: a server that cannot speak TLS
    /// as configured does not start.
    private func loadTLS(_ configuration: ServerConfiguration) throws -> TLSContext? {
        guard let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile else { return nil }
        do {
            return try TLSContext(certificateFile: certificate, keyFile: key)
        } catch {
            throw CommandFailure(error.description)
        }
    }

    private func storage(_ settings: Settings) throws -> (String, FileEventLog.Options, StorageConfiguration)? {
        do {
            guard let storage = try settings.storage() else { return nil }
            return (storage.directory, storage.log, storage.storage)
        } catch {
            throw ValidationError(error.description)
        }
    }

    private func initialDocument(_ path: String?) throws -> JSONDocument {
        guard let path else { return JSONDocument() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read the initial state file \(path)")
        }
        do {
            return JSONDocument(root: try JSON(parsing: [UInt8](data)))
        } catch {
            throw CommandFailure("the initial state file \(path) is not valid JSON: \(error.description)")
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension SlowConsumerPolicy: ExpressibleByArgument {}
extension FsyncPolicy: ExpressibleByArgument {}
