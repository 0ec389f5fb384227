import ArgumentParser
import Foundation
import ReactorServer

/// `reactord config`: the config file's tools.
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Checks a config file, or prints one with every key at its default.",
        subcommands: [CheckFile.self, Defaults.self]
    )

    /// `reactord config check FILE`.
    struct CheckFile: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Checks a config file: its JSON, every key's type and value, and the keys it does not know.",
            discussion: "Exits 1 naming the first problem; unknown keys are warnings (reactord ignores them) and do not fail the check. The environment and flags are not applied."
        )

        @Argument(help: "The config file (JSON).")
        var file: String

        func run() throws {
            do {
                var (settings, unknownKeys) = try Settings.file(file)
                // Tokens often come from the environment (REACTORD_TOKENS in an env file), so a file
                // without them for a public address is a warning here, not an error.
                if (settings.tokens ?? []).isEmpty, let host = settings.host, !Settings.isLoopback(host == "localhost" ? "127.0.0.1" : host), settings.insecure != true {
                    FileHandle.standardError.write(Data("warning: \(file): serves \(host) but names no tokens: reactord will refuse to start unless tokens come from REACTORD_TOKENS or --token (or insecure is true)\n".utf8))
                    settings.insecure = true
                }
                _ = try settings.serverConfiguration()
                _ = try settings.storage()
                _ = try settings.cluster()
                for key in unknownKeys.sorted() {
                    FileHandle.standardError.write(Data("warning: \(file): unknown key \"\(key)\" is ignored (known keys: reactord config defaults)\n".utf8))
                }
                print("ok: \(file)")
            } catch {
                FileHandle.standardError.write(Data("reactord config check: \(error.description)\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    /// `reactord config defaults`.
    struct Defaults: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints a config file with every key at its default value (null: not set), to start from."
        )

        func run() {
            let server = ServerConfiguration()
            let log = FileEventLog.Options()
            let storage = StorageConfiguration()
            let defaults: JSON = [
                "host": .string(server.host),
                "port": .integer(Int64(server.port)),
                "tokens": [],
                "logLevel": "info",
                "initialState": nil,
                "insecure": false,
                "corsOrigins": [],
                "maxConnections": .integer(Int64(server.maxConnections)),
                "maxConnectionRate": nil,
                "requestTimeout": .number(server.requestTimeout),
                "idleTimeout": .number(server.idleTimeout),
                "maxBodyBytes": .integer(Int64(server.limits.maxBodyBytes)),
                "maxHeaderBytes": .integer(Int64(server.limits.maxHeaderBytes)),
                "eventRateLimit": nil,
                "eventRateBurst": nil,
                "resumeWindow": .integer(Int64(server.resumeWindow)),
                "idempotencyWindow": .number(server.idempotencyWindow),
                "idempotencyKeys": .integer(Int64(server.idempotencyCapacity)),
                "maxUnsentBytes": .integer(Int64(server.maxUnsentBytes)),
                "slowConsumer": .string(server.slowConsumerPolicy.rawValue),
                "pingInterval": .number(server.pingInterval),
                "maxMessageBytes": .integer(Int64(server.maxMessageBytes)),
                "webSocketOrigins": nil,
                "webSocketCompression": .bool(server.webSocketCompression),
                "compressionMinBytes": .integer(Int64(server.compressionMinBytes)),
                "tlsCert": nil,
                "tlsKey": nil,
                "tlsPort": nil,
                "dataDir": nil,
                "fsync": .string(log.fsync.rawValue),
                "snapshotEvents": .integer(Int64(storage.snapshotEvents)),
                "snapshotBytes": .integer(Int64(storage.snapshotBytes)),
                "segmentBytes": .integer(Int64(log.segmentBytes)),
                "redis": nil,
                "redisKey": "reactor",
                "nodeName": nil,
                "redisTimeout": .number(RedisStreamLog.Options.defaultTimeoutSeconds),
                "redisWaitReplicas": 0,
            ]
            // One key per line, each value compact: easy to read and to edit.
            guard case .object(let members) = defaults else { return }
            print("{")
            for (index, (key, value)) in members.enumerated() {
                let comma = index == members.count - 1 ? "" : ","
                print("  \(JSON.string(key).jsonString): \(value.jsonString)\(comma)")
            }
            print("}")
        }
    }
}
