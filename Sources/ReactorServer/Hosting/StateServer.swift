import Logging
import Reactor

/// A hosted state on the network: a `Core` confined to the loop thread, and the HTTP server that
/// fires events at it and reads it.
public final class StateServer<StateType: HostedState> {
    public let core: Core<StateType>
    public let http: HTTPServer
    private let service: StateService<StateType>
    private let subscriptions: SubscriptionService<StateType>

    /// Creates the server on `loop`'s thread. `middlewares` are the core's (`process(event:state:)`);
    /// `httpMiddleware` runs after the built-in logging, CORS and auth, in front of the routes.
    public init(
        loop: EventLoop,
        state: StateType,
        version: UInt64 = 0,
        configuration: ServerConfiguration,
        middlewares: [any Middleware<StateType>] = [],
        httpMiddleware: [any HTTPMiddleware] = [],
        logger: Logger
    ) {
        core = Core(state: state, version: version, middlewares: [EventLogger<StateType>(logger: logger)] + middlewares, executor: loop)
        if !configuration.tokens.isEmpty {
            core.add(interceptor: EventPermissionInterceptor<StateType>())
        }
        service = StateService(core: core, loop: loop, configuration: configuration, logger: logger)
        subscriptions = SubscriptionService(core: core, loop: loop, configuration: configuration, logger: logger)
        var router = Router()
        service.register(in: &router)
        subscriptions.register(in: &router)
        var chain: [any HTTPMiddleware] = [RequestLogger(logger: logger)]
        if !configuration.corsOrigins.isEmpty { chain.append(CORSMiddleware(origins: Set(configuration.corsOrigins))) }
        chain.append(AuthMiddleware(tokens: configuration.tokens))
        http = HTTPServer(loop: loop, configuration: configuration, router: router, middleware: chain + httpMiddleware, logger: logger)
        subscriptions.http = http
    }

    /// Subscribers connected now, over WebSocket and Server-Sent Events.
    public var subscriberCount: Int { subscriptions.hub.subscriberCount }

    /// Binds and listens.
    public func start() throws(UVError) {
        try http.start()
    }

    /// Stops accepting and calls `completion` once in-flight requests are answered.
    public func shutdown(completion: @escaping () -> Void) {
        http.shutdown(completion: completion)
    }
}

/// Logs one line per applied event: its type and version.
struct EventLogger<StateType: HostedState>: Middleware {
    let logger: Logger

    func process(event: Event, state: StateType) {}

    func process(event: Event, state: StateType, version: UInt64) {
        guard logger.logLevel <= .info else { return }
        logger.info("event", metadata: ["type": "\(StateType.eventRegistry.typeName(of: event) ?? "\(type(of: event))")", "version": "\(version)"])
    }
}
