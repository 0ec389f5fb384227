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

    @Option(help: "Join a cluster whose shared log is in this Redis (host:port): every node serves one state.")
    var redis: String?

    @Option(help: "The cluster's name in Redis.")
    var redisKey = "rpg"

    @Option(help: "This node's name in the cluster.")
    var nodeName = "rpg"

    func run() throws {
        var logger = Logger(label: "rpg-server")
        logger.logLevel = .notice
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        let daemon = try Daemon(logger: logger)
        let initial = RPGState(players: [Player(name: "Ayla"), Player(name: "Bram")])
        let server: StateServer<RPGState>
        if let redis {
            // The typed state shares a log the same way reactord's document does.
            let parts = redis.split(separator: ":")
            guard parts.count == 2, let redisPort = Int32(parts[1]) else { throw ValidationError("--redis is host:port") }
            let options = RedisStreamLog.Options(host: String(parts[0]), port: redisPort, cluster: redisKey, node: nodeName)
            let joined = try ClusterBootstrap.join(options, initialState: initial, leaving: configuration.resumeWindow, logger: logger)
            let log = RedisStreamLog(loop: daemon.loop, options: options, epoch: joined.epoch, version: joined.version, head: joined.head,
                                     snapshotVersion: joined.snapshotVersion, logger: logger)
            server = StateServer(loop: daemon.loop, state: joined.state, version: joined.version, configuration: configuration, log: log, logger: logger)
            log.start()
        } else {
            server = StateServer(loop: daemon.loop, state: initial, configuration: configuration, logger: logger)
        }
        try server.start()
        logger.notice("listening", metadata: ["address": "\(host):\(server.http.port)"])
        try daemon.run { completion in server.shutdown(completion: completion) }
    }
}
