import Foundation
import Logging
import ReactorServer

/// reactord's settings, as one layer of them says: the config file, the environment, or the flags.
/// Unset is nil; `resolved(over:)` lays one layer over another (config file < environment < flags).
struct Settings {
    var host: String?
    var port: Int?
    var tokens: [AccessToken]?
    var logLevel: Logger.Level?
    var initialState: String?
    var insecure: Bool?
    var corsOrigins: [String]?
    var maxConnections: Int?
    var requestTimeout: Double?
    var idleTimeout: Double?
    var maxBodyBytes: Int?
    var maxHeaderBytes: Int?
    var resumeWindow: Int?
    var idempotencyWindow: Double?
    var idempotencyKeys: Int?
    var maxUnsentBytes: Int?
    var slowConsumer: SlowConsumerPolicy?
    var pingInterval: Double?
    var maxMessageBytes: Int?
    var webSocketOrigins: [String]?
    var webSocketEcho: Bool?
    var webSocketCompression: Bool?
    var compressionMinBytes: Int?
    var tlsCert: String?
    var tlsKey: String?
    var tlsPort: Int?
    var dataDir: String?
    var fsync: FsyncPolicy?
    var snapshotEvents: Int?
    var snapshotBytes: Int?
    var segmentBytes: Int?
    var eventRateLimit: Double?
    var eventRateBurst: Double?
    var maxConnectionRate: Double?
    var redis: String?
    var redisKey: String?
    var nodeName: String?
    var redisTimeout: Double?
    var redisWaitReplicas: Int?

    /// This layer over `lower`: every setting this layer has wins.
    func resolved(over lower: Settings) -> Settings {
        Settings(
            host: host ?? lower.host,
            port: port ?? lower.port,
            tokens: tokens ?? lower.tokens,
            logLevel: logLevel ?? lower.logLevel,
            initialState: initialState ?? lower.initialState,
            insecure: insecure ?? lower.insecure,
            corsOrigins: corsOrigins ?? lower.corsOrigins,
            maxConnections: maxConnections ?? lower.maxConnections,
            requestTimeout: requestTimeout ?? lower.requestTimeout,
            idleTimeout: idleTimeout ?? lower.idleTimeout,
            maxBodyBytes: maxBodyBytes ?? lower.maxBodyBytes,
            maxHeaderBytes: maxHeaderBytes ?? lower.maxHeaderBytes,
            resumeWindow: resumeWindow ?? lower.resumeWindow,
            idempotencyWindow: idempotencyWindow ?? lower.idempotencyWindow,
            idempotencyKeys: idempotencyKeys ?? lower.idempotencyKeys,
            maxUnsentBytes: maxUnsentBytes ?? lower.maxUnsentBytes,
            slowConsumer: slowConsumer ?? lower.slowConsumer,
            pingInterval: pingInterval ?? lower.pingInterval,
            maxMessageBytes: maxMessageBytes ?? lower.maxMessageBytes,
            webSocketOrigins: webSocketOrigins ?? lower.webSocketOrigins,
            webSocketEcho: webSocketEcho ?? lower.webSocketEcho,
            webSocketCompression: webSocketCompression ?? lower.webSocketCompression,
            compressionMinBytes: compressionMinBytes ?? lower.compressionMinBytes,
            tlsCert: tlsCert ?? lower.tlsCert,
            tlsKey: tlsKey ?? lower.tlsKey,
            tlsPort: tlsPort ?? lower.tlsPort,
            dataDir: dataDir ?? lower.dataDir,
            fsync: fsync ?? lower.fsync,
            snapshotEvents: snapshotEvents ?? lower.snapshotEvents,
            snapshotBytes: snapshotBytes ?? lower.snapshotBytes,
            segmentBytes: segmentBytes ?? lower.segmentBytes,
            eventRateLimit: eventRateLimit ?? lower.eventRateLimit,
            eventRateBurst: eventRateBurst ?? lower.eventRateBurst,
            maxConnectionRate: maxConnectionRate ?? lower.maxConnectionRate,
            redis: redis ?? lower.redis,
            redisKey: redisKey ?? lower.redisKey,
            nodeName: nodeName ?? lower.nodeName,
            redisTimeout: redisTimeout ?? lower.redisTimeout,
            redisWaitReplicas: redisWaitReplicas ?? lower.redisWaitReplicas
        )
    }

    /// The server configuration these settings describe, checked.
    func serverConfiguration() throws(ConfigurationError) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let host { configuration.host = host == "localhost" ? "127.0.0.1" : host }
        if let port {
            guard (0...65535).contains(port) else { throw ConfigurationError("port must be 0 to 65535, not \(port)") }
            configuration.port = port
        }
        configuration.tokens = tokens ?? []
        let names = configuration.tokens.map(\.name)
        if Set(names).count != names.count { throw ConfigurationError("two tokens have the same name; names must be unique") }
        if configuration.tokens.isEmpty && !Self.isLoopback(configuration.host) && insecure != true {
            throw ConfigurationError("refusing to serve \(configuration.host) without tokens: anyone who can reach it could read and change the state. Configure tokens (--token), or pass --insecure if that is what you want")
        }
        configuration.loopbackHostsOnly = configuration.tokens.isEmpty && insecure != true
        configuration.corsOrigins = corsOrigins ?? []
        if let maxConnections {
            guard maxConnections > 0 else { throw ConfigurationError("max-connections must be positive") }
            configuration.maxConnections = maxConnections
        }
        if let requestTimeout { configuration.requestTimeout = try Self.duration(requestTimeout, "request-timeout") }
        if let idleTimeout { configuration.idleTimeout = try Self.duration(idleTimeout, "idle-timeout") }
        if let maxBodyBytes {
            guard maxBodyBytes > 0, maxBodyBytes <= 1_000_000_000 else {
                throw ConfigurationError("max-body-bytes must be positive and at most 1000000000 (a journal record holds at most 1 GiB)")
            }
            configuration.limits.maxBodyBytes = maxBodyBytes
        }
        if let maxHeaderBytes {
            guard maxHeaderBytes >= 1024 else { throw ConfigurationError("max-header-bytes must be at least 1024") }
            configuration.limits.maxHeaderBytes = maxHeaderBytes
        }
        if let resumeWindow {
            guard resumeWindow >= 0 else { throw ConfigurationError("resume-window must not be negative") }
            configuration.resumeWindow = resumeWindow
        }
        if let idempotencyWindow {
            guard idempotencyWindow >= 1, idempotencyWindow <= Self.longestIdempotencyWindow else {
                throw ConfigurationError("idempotency-window must be at least 1 and at most \(Int(Self.longestIdempotencyWindow)) seconds (a week)")
            }
            configuration.idempotencyWindow = idempotencyWindow
        }
        if let idempotencyKeys {
            guard idempotencyKeys > 0 else { throw ConfigurationError("idempotency-keys must be positive") }
            configuration.idempotencyCapacity = idempotencyKeys
        }
        if let maxUnsentBytes {
            guard maxUnsentBytes >= 1024 else { throw ConfigurationError("max-unsent-bytes must be at least 1024") }
            configuration.maxUnsentBytes = maxUnsentBytes
        }
        if let slowConsumer { configuration.slowConsumerPolicy = slowConsumer }
        if let pingInterval { configuration.pingInterval = try Self.duration(pingInterval, "ping-interval") }
        if let maxMessageBytes {
            guard maxMessageBytes >= 125 else { throw ConfigurationError("max-message-bytes must be at least 125") }
            configuration.maxMessageBytes = maxMessageBytes
        }
        configuration.webSocketOrigins = webSocketOrigins.map(Set.init)
        configuration.webSocketEcho = webSocketEcho ?? false
        if let webSocketCompression { configuration.webSocketCompression = webSocketCompression }
        switch (tlsCert, tlsKey) {
        case (nil, nil):
            if tlsPort != nil { throw ConfigurationError("tls-port needs tls-cert and tls-key") }
        case (let certificate?, let key?):
            configuration.tlsCertificateFile = certificate
            configuration.tlsKeyFile = key
            if let tlsPort {
                guard (0...65535).contains(tlsPort) else { throw ConfigurationError("tls-port must be 0 to 65535, not \(tlsPort)") }
                guard tlsPort != configuration.port || tlsPort == 0 else { throw ConfigurationError("tls-port must differ from port (\(tlsPort)): leave it out to speak only TLS on port") }
                configuration.tlsPort = tlsPort
            }
        default:
            throw ConfigurationError("tls-cert and tls-key go together: give both, or neither")
        }
        if let compressionMinBytes {
            guard compressionMinBytes >= 0 else { throw ConfigurationError("compression-min-bytes must not be negative") }
            configuration.compressionMinBytes = compressionMinBytes
        }
        if let eventRateLimit {
            guard eventRateLimit > 0, eventRateLimit <= Self.highestRate else { throw ConfigurationError("event-rate-limit must be positive and at most \(Int(Self.highestRate))") }
            if let eventRateBurst, !(1...Self.highestRate).contains(eventRateBurst) {
                throw ConfigurationError("event-rate-burst must be at least 1 and at most \(Int(Self.highestRate))")
            }
            configuration.eventRateLimit = RateLimit(perSecond: eventRateLimit, burst: eventRateBurst)
        } else if eventRateBurst != nil {
            throw ConfigurationError("event-rate-burst needs event-rate-limit")
        }
        if let maxConnectionRate {
            guard maxConnectionRate > 0, maxConnectionRate <= Self.highestRate else { throw ConfigurationError("max-connection-rate must be positive and at most \(Int(Self.highestRate))") }
            configuration.maxConnectionRate = maxConnectionRate
        }
        return configuration
    }

    /// The journal's settings, checked; nil options when there is no data directory.
    /// The journal's settings are checked even without a data directory: a config file is checked
    /// alone, and the data directory may come from a flag.
    func storage() throws(ConfigurationError) -> (directory: String, log: FileEventLog.Options, storage: StorageConfiguration)? {
        var log = FileEventLog.Options()
        if let fsync { log.fsync = fsync }
        if let segmentBytes {
            guard segmentBytes >= 4096 else { throw ConfigurationError("segment-bytes must be at least 4096") }
            log.segmentBytes = segmentBytes
        }
        // The events a restart replays refill the resume window: keep as many as it holds.
        if let resumeWindow { log.recentRecords = max(log.recentRecords, resumeWindow) }
        // Snapshots carry as many idempotency answers as the server remembers.
        if let idempotencyKeys, idempotencyKeys > 0 { log.answersKept = idempotencyKeys }
        let storage = try snapshotIntervals()
        guard let dataDir, !dataDir.isEmpty else { return nil }
        return (dataDir, log, storage)
    }

    /// How often a snapshot is written, checked: by a journal, or by a cluster into Redis.
    func snapshotIntervals() throws(ConfigurationError) -> StorageConfiguration {
        var storage = StorageConfiguration()
        if let snapshotEvents {
            guard snapshotEvents > 0 else { throw ConfigurationError("snapshot-events must be positive") }
            storage.snapshotEvents = snapshotEvents
        }
        if let snapshotBytes {
            guard snapshotBytes > 0 else { throw ConfigurationError("snapshot-bytes must be positive") }
            storage.snapshotBytes = snapshotBytes
        }
        return storage
    }

    /// The cluster these settings join, checked; nil without `redis`.
    func cluster() throws(ConfigurationError) -> RedisStreamLog.Options? {
        guard let redis, !redis.isEmpty else { return nil }
        if let dataDir, !dataDir.isEmpty {
            throw ConfigurationError("--data-dir and --redis cannot be used together: a cluster node keeps its log in Redis (drop --data-dir)")
        }
        guard redis.hasPrefix("redis://") else { throw ConfigurationError("redis must be a URL redis://HOST:PORT, not \"\(Self.withoutPassword(redis))\"") }
        let location = redis.dropFirst("redis://".count)
        var address = location.prefix { $0 != "/" }
        // A cluster's keys live in database 0: Redis Cluster has no other, and one cluster key
        // already keeps clusters apart.
        let database = location.dropFirst(address.count)
        if database.contains("@") {
            // A '/' in the password: what follows it would be taken for the path, and named here.
            throw ConfigurationError("redis: \(Self.withoutPassword(redis)) is not a URL redis://[USER:PASSWORD@]HOST:PORT; a password holding '/' (or another reserved character) must be percent-encoded (%2F)")
        }
        guard database.isEmpty || database == "/" || database == "/0" else {
            throw ConfigurationError("redis: reactord keeps a cluster in database 0; drop \"\(database)\" from \(Self.withoutPassword(redis)) (--redis-key keeps clusters apart)")
        }
        var credentials: RedisCredentials?
        if let at = address.lastIndex(of: "@") {
            guard let parsed = RedisCredentials(userInformation: address[..<at]) else {
                throw ConfigurationError("redis: credentials are redis://:PASSWORD@HOST:PORT or redis://USER:PASSWORD@HOST:PORT, percent-encoded; not those of \(Self.withoutPassword(redis))")
            }
            credentials = parsed
            address = address[address.index(after: at)...]
        }
        let host: Substring
        var port: Int32 = 6379
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            host = address[address.index(after: address.startIndex)..<close]
            let rest = address[address.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { throw ConfigurationError("redis: bad address in \(Self.withoutPassword(redis))") }
            if rest.hasPrefix(":") { port = try Self.redisPort(rest.dropFirst(), in: redis) }
        } else if let colon = address.lastIndex(of: ":") {
            host = address[..<colon]
            port = try Self.redisPort(address[address.index(after: colon)...], in: redis)
        } else {
            host = address
        }
        guard !host.isEmpty else { throw ConfigurationError("redis: no host in \(Self.withoutPassword(redis))") }
        let key = redisKey ?? "reactor"
        guard !key.isEmpty, !key.contains("}") else { throw ConfigurationError("redis-key must be a non-empty name without '}'") }
        let node = nodeName ?? ProcessInfo.processInfo.hostName + ":" + String(ProcessInfo.processInfo.processIdentifier)
        let timeout = try Self.duration(redisTimeout ?? RedisStreamLog.Options.defaultTimeoutSeconds, "redis-timeout")
        let replicas = redisWaitReplicas ?? 0
        guard replicas >= 0 else { throw ConfigurationError("redis-wait-replicas must be 0 or more") }
        return RedisStreamLog.Options(host: String(host), port: port, cluster: key, node: node, timeoutMilliseconds: UInt64(timeout * 1_000),
                                      waitReplicas: replicas, credentials: credentials)
    }

    /// The port of a `--redis` URL, checked.
    static func redisPort(_ text: Substring, in url: String) throws(ConfigurationError) -> Int32 {
        guard let port = Int32(text), (1...65535).contains(port) else {
            throw ConfigurationError("redis: the port must be 1 to 65535, not \"\(text)\" in \(withoutPassword(url))")
        }
        return port
    }

    /// A `--redis` URL as errors may show it: with its password, if any, as `***`.
    static func withoutPassword(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@"), let scheme = url.range(of: "://"), scheme.upperBound <= at else { return url }
        let user = url[scheme.upperBound..<at].prefix { $0 != ":" }
        return url[..<scheme.upperBound] + user + ":***" + url[at...]
    }

    /// A duration setting in seconds, checked: at least a millisecond (what the loop's timers
    /// count) and at most a day, so that it converts to milliseconds whatever was typed (`inf`, `1e30`).
    static func duration(_ seconds: Double, _ name: String) throws(ConfigurationError) -> Double {
        guard seconds >= 0.001, seconds <= 86_400 else {
            throw ConfigurationError("\(name) must be at least 0.001 and at most 86400 seconds (a day), not \(seconds)")
        }
        return seconds
    }

    /// The highest rate a rate setting takes, per second: beyond it, a limit limits nothing.
    static let highestRate = 1e9

    /// The longest an idempotency key may be remembered: a retry comes within minutes, not weeks.
    static let longestIdempotencyWindow = 7 * 24 * 3600.0

    static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1"
    }
}

extension Settings {
    /// The `REACTORD_*` variables.
    static func environment(_ variables: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Settings {
        var settings = Settings()
        func value(_ name: String) -> String? {
            variables["REACTORD_" + name].flatMap { $0.isEmpty ? nil : $0 }
        }
        func number<N: LosslessStringConvertible>(_ name: String) throws(ConfigurationError) -> N? {
            guard let text = value(name) else { return nil }
            guard let number = N(text) else { throw ConfigurationError("REACTORD_\(name) must be a number, not \"\(text)\"") }
            return number
        }
        settings.host = value("HOST")
        settings.port = try number("PORT")
        if let tokens = value("TOKENS") {
            settings.tokens = []
            for spec in tokens.split(separator: ",") { settings.tokens!.append(try AccessToken(parsing: String(spec))) }
        }
        if let level = value("LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level) else { throw ConfigurationError("REACTORD_LOG_LEVEL: unknown level \"\(level)\"") }
            settings.logLevel = parsed
        }
        settings.initialState = value("INITIAL_STATE")
        if let insecure = value("INSECURE") { settings.insecure = ["1", "true", "yes"].contains(insecure.lowercased()) }
        settings.corsOrigins = value("CORS_ORIGINS").map { $0.split(separator: ",").map(String.init) }
        settings.maxConnections = try number("MAX_CONNECTIONS")
        settings.requestTimeout = try number("REQUEST_TIMEOUT")
        settings.idleTimeout = try number("IDLE_TIMEOUT")
        settings.maxBodyBytes = try number("MAX_BODY_BYTES")
        settings.maxHeaderBytes = try number("MAX_HEADER_BYTES")
        settings.resumeWindow = try number("RESUME_WINDOW")
        settings.idempotencyWindow = try number("IDEMPOTENCY_WINDOW")
        settings.idempotencyKeys = try number("IDEMPOTENCY_KEYS")
        settings.maxUnsentBytes = try number("MAX_UNSENT_BYTES")
        if let policy = value("SLOW_CONSUMER") {
            guard let parsed = SlowConsumerPolicy(rawValue: policy) else { throw ConfigurationError("REACTORD_SLOW_CONSUMER must be snapshot or close, not \"\(policy)\"") }
            settings.slowConsumer = parsed
        }
        settings.pingInterval = try number("PING_INTERVAL")
        settings.maxMessageBytes = try number("MAX_MESSAGE_BYTES")
        settings.webSocketOrigins = value("WEBSOCKET_ORIGINS").map { $0.split(separator: ",").map(String.init) }
        if let compression = value("WEBSOCKET_COMPRESSION") {
            switch compression.lowercased() {
            case "1", "true", "yes": settings.webSocketCompression = true
            case "0", "false", "no": settings.webSocketCompression = false
            default: throw ConfigurationError("REACTORD_WEBSOCKET_COMPRESSION must be true or false, not \"\(compression)\"")
            }
        }
        settings.compressionMinBytes = try number("COMPRESSION_MIN_BYTES")
        settings.tlsCert = value("TLS_CERT")
        settings.tlsKey = value("TLS_KEY")
        settings.tlsPort = try number("TLS_PORT")
        settings.dataDir = value("DATA_DIR")
        if let policy = value("FSYNC") {
            guard let parsed = FsyncPolicy(rawValue: policy) else { throw ConfigurationError("REACTORD_FSYNC must be always, batch or never, not \"\(policy)\"") }
            settings.fsync = parsed
        }
        settings.snapshotEvents = try number("SNAPSHOT_EVENTS")
        settings.snapshotBytes = try number("SNAPSHOT_BYTES")
        settings.segmentBytes = try number("SEGMENT_BYTES")
        settings.eventRateLimit = try number("EVENT_RATE_LIMIT")
        settings.eventRateBurst = try number("EVENT_RATE_BURST")
        settings.maxConnectionRate = try number("MAX_CONNECTION_RATE")
        settings.redis = value("REDIS")
        settings.redisKey = value("REDIS_KEY")
        settings.nodeName = value("NODE_NAME")
        settings.redisTimeout = try number("REDIS_TIMEOUT")
        settings.redisWaitReplicas = try number("REDIS_WAIT_REPLICAS")
        return settings
    }

    static let fileKeys: Set<String> = [
        "host", "port", "tokens", "logLevel", "initialState", "insecure", "corsOrigins", "maxConnections",
        "requestTimeout", "idleTimeout", "maxBodyBytes", "maxHeaderBytes", "resumeWindow", "idempotencyWindow", "idempotencyKeys", "maxUnsentBytes",
        "slowConsumer", "pingInterval", "maxMessageBytes", "webSocketOrigins", "webSocketCompression", "compressionMinBytes",
        "tlsCert", "tlsKey", "tlsPort",
        "dataDir", "fsync", "snapshotEvents", "snapshotBytes", "segmentBytes",
        "eventRateLimit", "eventRateBurst", "maxConnectionRate", "redis", "redisKey", "nodeName", "redisTimeout", "redisWaitReplicas",
    ]

    /// A JSON config file (docs/configuration.md). Returns the settings and the keys it did not know.
    /// Whether users other than its owner may read the file at `path`.
    static func isReadableByOthers(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & 0o044 != 0
    }

    static func file(_ path: String) throws(ConfigurationError) -> (Settings, unknownKeys: [String]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read the config file \(path)")
        }
        let json: JSON
        do {
            json = try JSON(parsing: [UInt8](data))
        } catch {
            throw ConfigurationError("config file \(path) is not valid JSON: \(error.description)")
        }
        guard case .object(let members) = json else { throw ConfigurationError("config file \(path) must hold a JSON object") }
        func fail(_ key: String, _ expected: String) -> ConfigurationError {
            ConfigurationError("config file \(path): \"\(key)\" must be \(expected)")
        }
        var settings = Settings()
        for (key, value) in members where value != .null {  // null: not set, as `config defaults` writes it
            switch key {
            case "host": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.host = text
            case "port": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.port = Int(number)
            case "logLevel":
                guard let text = value.stringValue, let level = Logger.Level(rawValue: text) else { throw fail(key, "one of trace, debug, info, notice, warning, error, critical") }
                settings.logLevel = level
            case "initialState": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.initialState = text
            case "insecure": guard let flag = value.boolValue else { throw fail(key, "true or false") }; settings.insecure = flag
            case "corsOrigins":
                guard let origins = value.arrayValue?.compactMap(\.stringValue), origins.count == value.arrayValue?.count else { throw fail(key, "an array of strings") }
                settings.corsOrigins = origins
            case "maxConnections": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.maxConnections = Int(number)
            case "maxBodyBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.maxBodyBytes = Int(number)
            case "maxHeaderBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.maxHeaderBytes = Int(number)
            case "requestTimeout": guard let number = value.doubleValue else { throw fail(key, "a number of seconds") }; settings.requestTimeout = number
            case "idleTimeout": guard let number = value.doubleValue else { throw fail(key, "a number of seconds") }; settings.idleTimeout = number
            case "resumeWindow": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.resumeWindow = Int(number)
            case "idempotencyWindow": guard let number = value.doubleValue else { throw fail(key, "a number of seconds") }; settings.idempotencyWindow = number
            case "idempotencyKeys": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.idempotencyKeys = Int(number)
            case "maxUnsentBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.maxUnsentBytes = Int(number)
            case "maxMessageBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.maxMessageBytes = Int(number)
            case "webSocketCompression": guard let flag = value.boolValue else { throw fail(key, "true or false") }; settings.webSocketCompression = flag
            case "compressionMinBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.compressionMinBytes = Int(number)
            case "tlsCert": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.tlsCert = text
            case "tlsKey": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.tlsKey = text
            case "tlsPort": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.tlsPort = Int(number)
            case "pingInterval": guard let number = value.doubleValue else { throw fail(key, "a number of seconds") }; settings.pingInterval = number
            case "slowConsumer":
                guard let text = value.stringValue, let policy = SlowConsumerPolicy(rawValue: text) else { throw fail(key, "snapshot or close") }
                settings.slowConsumer = policy
            case "webSocketOrigins":
                guard let origins = value.arrayValue?.compactMap(\.stringValue), origins.count == value.arrayValue?.count else { throw fail(key, "an array of strings") }
                settings.webSocketOrigins = origins
            case "dataDir": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.dataDir = text
            case "fsync":
                guard let text = value.stringValue, let policy = FsyncPolicy(rawValue: text) else { throw fail(key, "always, batch or never") }
                settings.fsync = policy
            case "snapshotEvents": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.snapshotEvents = Int(number)
            case "snapshotBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.snapshotBytes = Int(number)
            case "segmentBytes": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.segmentBytes = Int(number)
            case "eventRateLimit": guard let number = value.doubleValue else { throw fail(key, "a number of events per second") }; settings.eventRateLimit = number
            case "eventRateBurst": guard let number = value.doubleValue else { throw fail(key, "a number of events") }; settings.eventRateBurst = number
            case "maxConnectionRate": guard let number = value.doubleValue else { throw fail(key, "a number of connections per second") }; settings.maxConnectionRate = number
            case "redis": guard let text = value.stringValue else { throw fail(key, "a URL redis://HOST:PORT") }; settings.redis = text
            case "redisKey": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.redisKey = text
            case "nodeName": guard let text = value.stringValue else { throw fail(key, "a string") }; settings.nodeName = text
            case "redisTimeout": guard let number = value.doubleValue else { throw fail(key, "a number of seconds") }; settings.redisTimeout = number
            case "redisWaitReplicas": guard let number = value.int64Value else { throw fail(key, "an integer") }; settings.redisWaitReplicas = Int(number)
            case "tokens":
                guard let entries = value.arrayValue else { throw fail(key, "an array of {name, secret, scopes, eventTypes?}") }
                settings.tokens = try entries.map { entry throws(ConfigurationError) in try token(from: entry, path: path) }
            default: continue
            }
        }
        let unknown = Array(members.keys.filter { !fileKeys.contains($0) })
        return (settings, unknown)
    }

    /// The members a token entry may have: a misspelt one would otherwise be a restriction
    /// silently not applied.
    private static let tokenMembers: Set<String> = ["name", "secret", "scopes", "eventTypes", "eventsPerSecond", "burst"]

    private static func token(from entry: JSON, path: String) throws(ConfigurationError) -> AccessToken {
        guard let name = entry["name"]?.stringValue, let secret = entry["secret"]?.stringValue,
              let scopeValues = entry["scopes"]?.arrayValue, !name.isEmpty, !secret.isEmpty else {
            throw ConfigurationError("config file \(path): each token needs a \"name\", a \"secret\" and \"scopes\" (an array of read, fire, admin)")
        }
        if case .object(let members) = entry, let unknown = members.keys.first(where: { !tokenMembers.contains($0) }) {
            throw ConfigurationError("config file \(path): token \(name): unknown member \"\(unknown)\"; a token has \(tokenMembers.sorted().joined(separator: ", "))")
        }
        let scopeNames = scopeValues.compactMap(\.stringValue)
        guard scopeNames.count == scopeValues.count else {
            throw ConfigurationError("config file \(path): token \(name): \"scopes\" must be an array of strings")
        }
        var scopes = Set<Scope>()
        for scopeName in scopeNames {
            guard let scope = Scope(rawValue: scopeName) else {
                throw ConfigurationError("config file \(path): token \(name): unknown scope \"\(scopeName)\"; scopes are read, fire, admin")
            }
            scopes.insert(scope)
        }
        guard !scopes.isEmpty else { throw ConfigurationError("config file \(path): token \(name) has no scope") }
        var types: Set<String>?
        if let listed = entry["eventTypes"] {
            guard let values = listed.arrayValue, case let names = values.compactMap(\.stringValue), names.count == values.count else {
                throw ConfigurationError("config file \(path): token \(name): \"eventTypes\" must be an array of event type names")
            }
            types = Set(names)
        }
        var rateLimit: RateLimit?
        if let rate = entry["eventsPerSecond"] {
            guard let perSecond = rate.doubleValue, perSecond > 0 else {
                throw ConfigurationError("config file \(path): token \(name): \"eventsPerSecond\" must be a positive number")
            }
            var burst: Double?
            if let given = entry["burst"] {
                guard let value = given.doubleValue, value >= 1 else {
                    throw ConfigurationError("config file \(path): token \(name): \"burst\" must be a number, at least 1")
                }
                burst = value
            }
            rateLimit = RateLimit(perSecond: perSecond, burst: burst)
        } else if entry["burst"] != nil {
            throw ConfigurationError("config file \(path): token \(name): \"burst\" needs \"eventsPerSecond\"")
        }
        return AccessToken(name: name, secret: secret, scopes: scopes, allowedEventTypes: types, rateLimit: rateLimit)
    }
}
