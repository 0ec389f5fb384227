import Logging
import Reactor

/// Counts each applied event by type, and logs it (type and version) at the info level.
/// @unchecked Sendable: the core runs middleware on its executor, the loop thread, where the
/// metrics live.
/// A class: a struct holding a logger (an existential handler and its metadata) would be several
/// references to retain wherever it is copied, as `SpecializedMiddleware` captures it.
final class EventLogger<StateType: HostedState>: Middleware, @unchecked Sendable {
    private let logger: Logger
    /// Writes the line instead of the logger (`RoutineLogLines.standardError`).
    private let lines: LogLineWriter?
    private let metrics: ServerMetrics
    /// Asked once: reading a logger's level goes through its handler, for every event.
    private let logsEvents: Bool

    init(logger: Logger, lines: LogLineWriter? = nil, metrics: ServerMetrics) {
        self.logger = logger
        self.lines = lines
        self.metrics = metrics
        logsEvents = logger.logLevel <= .info
    }

    func process(event: Event, state: StateType) {}

    func process(event: Event, state: StateType, version: UInt64) {
        let type = StateType.eventType(of: event) ?? "\(Swift.type(of: event))"
        metrics.recordEvent(type: type)
        guard logsEvents else { return }
        if let lines { return lines.event(type: type, version: version) }
        logger.info("event", metadata: ["type": "\(type)", "version": "\(version)"])
    }
}
