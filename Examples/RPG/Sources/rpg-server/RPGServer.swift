import ArgumentParser
import Logging
import RPG
import ReactorServer

/// The seed's RPG example on the network: `POST /events` with `{"type":"levelUp","playerID":0}`.
struct RPGServer: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rpg-server", abstract: "Serves the RPG example state over HTTP.")

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 7071

    func run() throws {
        var logger = Logger(label: "rpg-server")
        logger.logLevel = .notice
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        let daemon = try Daemon(logger: logger)
        let server = StateServer(loop: daemon.loop, state: RPGState(players: [Player(name: "Ayla"), Player(name: "Bram")]),
                                 configuration: configuration, logger: logger)
        try server.start()
        logger.notice("listening", metadata: ["address": "\(host):\(server.http.port)"])
        try daemon.run { completion in server.shutdown(completion: completion) }
    }
}
