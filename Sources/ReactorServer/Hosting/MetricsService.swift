import Foundation
import Reactor

/// `GET /metrics`: the server's metrics in the Prometheus text format, assembled from the counters
/// where they are kept (requests and events here, pushes in the subscription hub, the journal's own).
final class MetricsService<StateType: HostedState> {
    private let metrics: ServerMetrics
    private let pipeline: CommitPipeline<StateType>
    private let hub: SubscriptionHub<StateType>

    init(metrics: ServerMetrics, pipeline: CommitPipeline<StateType>, hub: SubscriptionHub<StateType>) {
        self.metrics = metrics
        self.pipeline = pipeline
        self.hub = hub
    }

    func register(in router: inout Router) {
        router.add(.get, "/metrics", scope: .read) { [unowned self] _, _, respond in
            respond(HTTPResponse(status: .ok, contentType: .prometheusText, body: render()))
        }
    }

    func render() -> [UInt8] {
        var text = PrometheusText()
        text.family("reactor_http_requests_total", .counter, help: "HTTP requests answered, by route and status.")
        for (index, statuses) in metrics.requests.enumerated() {
            for (status, count) in statuses.sorted {
                text.sample("reactor_http_requests_total", [("route", metrics.routeName(index)), ("status", String(status))], count)
            }
        }
        text.family("reactor_http_request_duration_seconds", .histogram, help: "Time from a request's arrival to its answer, by route.")
        for (index, histogram) in metrics.requestSeconds.enumerated() where histogram.count > 0 {
            text.histogram("reactor_http_request_duration_seconds", [("route", metrics.routeName(index))], histogram)
        }
        text.family("reactor_http_connections_open", .gauge, help: "Open connections (HTTP, WebSocket and event streams).")
        text.sample("reactor_http_connections_open", metrics.openConnections())
        text.family("reactor_http_connections_accepted_total", .counter, help: "Connections accepted.")
        text.sample("reactor_http_connections_accepted_total", metrics.connectionsAccepted)
        text.family("reactor_http_connections_refused_total", .counter, help: "Connections answered and closed at once, by reason.")
        for reason in ["max-connections", "connection-rate"] {
            text.sample("reactor_http_connections_refused_total", [("reason", reason)], metrics.connectionsRefused[reason] ?? 0)
        }

        text.family("reactor_events_applied_total", .counter, help: "Events applied to the state, by type.")
        for (type, count) in zip(metrics.eventTypes, metrics.eventCounts).sorted(by: { $0.0 < $1.0 }) {
            text.sample("reactor_events_applied_total", [("type", type)], count)
        }
        text.family("reactor_events_undone_total", .counter, help: "Applied events undone because the journal could not store them.")
        text.sample("reactor_events_undone_total", metrics.eventsUndone)
        text.family("reactor_events_rate_limited_total", .counter, help: "Events refused with 429 by a token's rate limit.")
        text.sample("reactor_events_rate_limited_total", metrics.rateLimitedEvents)
        text.family("reactor_state_version", .gauge, help: "The version of the published state.")
        text.sample("reactor_state_version", pipeline.publishedVersion)

        text.family("reactor_subscribers", .gauge, help: "Subscribers connected, over WebSocket and Server-Sent Events.")
        text.sample("reactor_subscribers", hub.subscriberCount)
        text.family("reactor_subscriber_pushes_total", .counter, help: "Messages sent to subscribers.")
        text.sample("reactor_subscriber_pushes_total", hub.counters.pushes)
        text.family("reactor_subscriber_push_bytes_total", .counter, help: "Bytes of the messages sent to subscribers (frames and records).")
        text.sample("reactor_subscriber_push_bytes_total", hub.counters.pushedBytes)
        text.family("reactor_subscriber_conflations_total", .counter, help: "Slow subscribers whose patches were replaced by a snapshot.")
        text.sample("reactor_subscriber_conflations_total", hub.counters.conflations)
        text.family("reactor_subscriber_slow_disconnects_total", .counter, help: "Slow subscribers closed (policy close, code 4008).")
        text.sample("reactor_subscriber_slow_disconnects_total", hub.counters.slowConsumerDisconnects)

        text.family("reactor_journal_ready", .gauge, help: "1 while the journal accepts writes (or there is none), 0 after a failed write.")
        text.sample("reactor_journal_ready", pipeline.isHealthy ? 1 : 0)
        if let log = pipeline.log {
            let statistics = log.statistics
            text.family("reactor_journal_append_seconds", .histogram, help: "Time to write and fsync one group of events, off the loop.")
            text.histogram("reactor_journal_append_seconds", [], statistics.appendSeconds)
            text.family("reactor_journal_append_failures_total", .counter, help: "Groups of events the journal could not store.")
            text.sample("reactor_journal_append_failures_total", statistics.appendFailures)
            text.family("reactor_journal_bytes_total", .counter, help: "Bytes appended to the journal.")
            text.sample("reactor_journal_bytes_total", statistics.bytesAppended)
            text.family("reactor_snapshot_version", .gauge, help: "The version of the newest snapshot.")
            text.sample("reactor_snapshot_version", statistics.snapshotVersion)
            text.family("reactor_snapshot_bytes", .gauge, help: "The size of the newest snapshot.")
            text.sample("reactor_snapshot_bytes", statistics.snapshotBytes)
            if let time = statistics.snapshotTime {
                text.family("reactor_snapshot_age_seconds", .gauge, help: "Seconds since the newest snapshot was written.")
                text.sample("reactor_snapshot_age_seconds", max(0, Date().timeIntervalSince1970 - time))
            }
        }
        if let shared = pipeline.shared {
            let status = shared.status
            text.family("reactor_cluster_redis_connected", .gauge, help: "1 while both connections to Redis are open and answering.")
            text.sample("reactor_cluster_redis_connected", status.connection == "connected" ? 1 : 0)
            text.family("reactor_cluster_history_lost", .gauge, help: "1 once Redis turned out to hold another history than this node's (a changed epoch).")
            text.sample("reactor_cluster_history_lost", status.lostHistory == nil ? 0 : 1)
            text.family("reactor_cluster_head_version", .gauge, help: "The newest version this node knows the shared log holds.")
            text.sample("reactor_cluster_head_version", max(status.head, pipeline.publishedVersion))
            text.family("reactor_cluster_lag_events", .gauge, help: "Events in the shared log this node has not applied yet.")
            text.sample("reactor_cluster_lag_events", status.head > pipeline.publishedVersion ? status.head - pipeline.publishedVersion : 0)
            text.family("reactor_cluster_append_conflicts_total", .counter, help: "Appends refused because another node appended first (applied again on top).")
            text.sample("reactor_cluster_append_conflicts_total", status.conflicts)
            text.family("reactor_cluster_redis_reconnects_total", .counter, help: "Connections to Redis opened again after one closed.")
            text.sample("reactor_cluster_redis_reconnects_total", status.reconnects)
            text.family("reactor_cluster_peers", .gauge, help: "Other nodes that said they were alive in the last 10 seconds.")
            text.sample("reactor_cluster_peers", status.peers.count)
        }
        return text.bytes
    }
}
