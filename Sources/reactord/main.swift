import ArgumentParser
import Foundation
import Logging
import ReactorServer

/// reactord: one Reactor core on the network.
struct Reactord: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reactord",
        abstract: "Serves one shared state: events in, state out, live subscriptions."
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on.")
    var port = 7070

    @Option(help: "Directory for the journal and snapshots.")
    var dataDir = "reactord-data"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func run() throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "reactord")
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        let daemon = try Daemon(logger: logger)
        logger.info("reactord started", metadata: ["host": "\(host)", "port": "\(port)", "data-dir": "\(dataDir)"])
        daemon.runUntilSignalled()
        logger.info("reactord stopped")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

Reactord.main()
