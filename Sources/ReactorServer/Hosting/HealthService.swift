import Reactor

/// `GET /livez` (the process answers), `GET /readyz` (not ready while the journal or the cluster
/// refuses writes, with why) and, in a cluster, `GET /cluster` (this node, its versions, Redis and
/// the nodes seen recently).
final class HealthService<StateType: HostedState> {
    private let pipeline: CommitPipeline<StateType>

    init(pipeline: CommitPipeline<StateType>) {
        self.pipeline = pipeline
    }

    func register(in router: inout Router) {
        let live = HTTPResponse.json(Array(#"{"status":"live"}"#.utf8))
        router.add(.get, "/livez", scope: nil) { _, _, respond in
            respond(live)
        }
        router.add(.get, "/readyz", scope: nil) { [self] _, _, respond in
            let version = JSON.integer(Int64(pipeline.publishedVersion))
            guard let reason = pipeline.unreadiness else {
                return respond(.json(JSON.object(["status": "ready", "version": version]).jsonBytes))
            }
            respond(.json(JSON.object(["status": "unready", "version": version, "reason": .string(reason)]).jsonBytes,
                          status: .serviceUnavailable))
        }
        if let shared = pipeline.shared {
            router.add(.get, "/cluster", scope: .read) { [self] _, _, respond in
                let status = shared.status
                var members: JSON.Object = [
                    "node": .string(status.node),
                    "version": .integer(Int64(pipeline.publishedVersion)),
                    "head": .integer(Int64(max(status.head, pipeline.publishedVersion))),
                    "lag": .integer(Int64(status.head > pipeline.publishedVersion ? status.head - pipeline.publishedVersion : 0)),
                    "redis": .string(status.connection),
                    "ready": .bool(pipeline.unreadiness == nil),
                    "nodes": .array(status.peers.keys.sorted().map(JSON.string)),
                    "conflicts": .integer(Int64(status.conflicts)),
                    "reconnects": .integer(Int64(status.reconnects)),
                ]
                if let lost = status.lostHistory { members["lostHistory"] = .string(lost) }
                if let clash = status.nameClash { members["nameClash"] = .string(clash) }
                respond(.json(JSON.object(members).jsonBytes))
            }
        }
    }
}
