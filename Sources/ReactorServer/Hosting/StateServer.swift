import Logging
import Reactor

/// A hosted state on the network: a `Core` confined to the loop thread, the event log that keeps
/// what it applied, and the HTTP server that fires events at it and reads it.
public final class StateServer<StateType: HostedState> {
    public let core: Core<StateType>
    public let http: HTTPServer
    private let pipeline: CommitPipeline<StateType>
    private let events: EventService<StateType>
    private let state: StateService<StateType>
    private let health: HealthService<StateType>
    private let history: HistoryService<StateType>
    private let subscriptions: SubscriptionService<StateType>
    private let metricsService: MetricsService<StateType>
    /// The server's counters, also served at `/metrics`.
    public let metrics = ServerMetrics()

    /// Creates the server on `loop`'s thread. `state` and `version` are where the core starts: the
    /// state `log` was recovered to, when there is a log. `middlewares` are the core's
    /// (`process(event:state:)`), run before the built-in event logging and publishing;
    /// `httpMiddleware` runs after the built-in logging, CORS and auth, in front of the routes.
    /// `files` are served as they are (a dashboard, say). With `tls`, connections speak TLS (see
    /// `HTTPServer`).
    public init(
        loop: EventLoop,
        state: StateType,
        version: UInt64 = 0,
        configuration: ServerConfiguration,
        log: (any EventLog)? = nil,
        storage: StorageConfiguration = StorageConfiguration(),
        files: StaticFiles = StaticFiles(),
        middlewares: [any Middleware<StateType>] = [],
        httpMiddleware: [any HTTPMiddleware] = [],
        tls: TLSContext? = nil,
        logger: Logger
    ) {
        core = Core(state: state, version: version, middlewares: middlewares, executor: loop)
        let lines = configuration.routineLogLines == .standardError
            ? LogLineWriter(output: loop.standardErrorLog, label: logger.label) : nil
        if lines != nil {
            loop.standardErrorLog.onDropsEnded = { dropped in
                logger.warning("log lines were lost: standard error was not being read", metadata: ["bytes": "\(dropped)"])
            }
        }
        if !configuration.tokens.isEmpty {
            core.add(interceptor: SpecializedInterceptor(EventPermissionInterceptor<StateType>()))
            core.add(interceptor: SpecializedInterceptor(EventRateInterceptor<StateType>(defaultLimit: configuration.eventRateLimit, metrics: metrics)))
        }
        core.add(interceptor: SpecializedInterceptor(AdmissionInterceptor<StateType>(bodyLimit: configuration.limits.maxBodyBytes)))
        // The pipeline moves the published state and tells the hub of each state it publishes;
        // the hub reads the published state when it needs it (a new subscriber's snapshot).
        let published = PublishedState(core: core, state: state, version: version, isJournaled: log != nil)
        let hub = SubscriptionHub(windowCapacity: configuration.resumeWindow, history: log?.history ?? HistoryName.random(), logger: logger) {
            published.current.state
        }
        pipeline = CommitPipeline(core: core, published: published, log: log, hub: hub, loop: loop,
                                  options: .init(snapshotEvents: storage.snapshotEvents, snapshotBytes: storage.snapshotBytes),
                                  metrics: metrics, logger: logger)
        // After the operator's middleware: the pipeline publishes what they have seen.
        core.add(middleware: SpecializedMiddleware(EventLogger<StateType>(logger: logger, lines: lines, metrics: metrics), then: pipeline))
        history = HistoryService(pipeline: pipeline, loop: loop, pageBytes: configuration.maxUnsentBytes, logger: logger)
        let path = EventPath(core: core, pipeline: pipeline, loop: loop)
        events = EventService(path: path, loop: loop, configuration: configuration)
        self.state = StateService(pipeline: pipeline, history: history, logger: logger)
        health = HealthService(pipeline: pipeline)
        subscriptions = SubscriptionService(hub: hub, fire: { [path] in path.fire($0, origin: $1, answer: $2) }, loop: loop, configuration: configuration,
                                            catchUp: pipeline.shared == nil ? nil : { [pipeline] in pipeline.whenPublished(catchingUpTo: $0, $1) }, logger: logger)
        metricsService = MetricsService(metrics: metrics, pipeline: pipeline, hub: subscriptions.hub)
        var router = Router()
        events.register(in: &router)
        self.state.register(in: &router)
        health.register(in: &router)
        history.register(in: &router)
        subscriptions.register(in: &router)
        metricsService.register(in: &router)
        files.register(in: &router)
        // Each built-in stage only where it has something to do: one that would only call `next`
        // still costs every request a call and a closure.
        var chain: [any HTTPMiddleware] = []
        if RequestLogger.logsRequests(logger) { chain.append(RequestLogger(logger: logger, lines: lines)) }
        if configuration.loopbackHostsOnly && configuration.tokens.isEmpty { chain.append(LoopbackHostMiddleware()) }
        if !configuration.corsOrigins.isEmpty { chain.append(CORSMiddleware(origins: Set(configuration.corsOrigins))) }
        if !configuration.tokens.isEmpty { chain.append(AuthMiddleware(tokens: configuration.tokens)) }
        http = HTTPServer(loop: loop, configuration: configuration, router: router, middleware: chain + httpMiddleware, metrics: metrics, tls: tls, logger: logger)
    }

    /// The subscription hub (for tests of what it keeps).
    var subscriptionHub: SubscriptionHub<StateType> { subscriptions.hub }

    /// Subscribers connected now, over WebSocket and Server-Sent Events.
    public var subscriberCount: Int { subscriptions.hub.subscriberCount }

    /// The newest version clients may see: with a log, the newest one it holds.
    public var publishedVersion: UInt64 { pipeline.publishedVersion }

    /// Binds and listens.
    public func start() throws(UVError) {
        try http.start()
    }

    /// Stops accepting, answers what is in flight (its events journaled first), journals whatever
    /// else was applied, closes the log (fsync), and then calls `completion`.
    public func shutdown(completion: @escaping () -> Void) {
        http.shutdown { [pipeline] in
            guard let log = pipeline.log else { return completion() }
            pipeline.drain { log.close(completion: completion) }
        }
    }
}

/// How a server with an event log keeps it short: a snapshot after so many events or journal bytes.
public struct StorageConfiguration: Sendable {
    public var snapshotEvents = 100_000
    public var snapshotBytes = 64 << 20

    public init(snapshotEvents: Int = 100_000, snapshotBytes: Int = 64 << 20) {
        self.snapshotEvents = snapshotEvents
        self.snapshotBytes = snapshotBytes
    }
}
