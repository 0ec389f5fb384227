import Logging

/// A client subscribed with Server-Sent Events (`GET /stream`): the same messages as over WebSocket,
/// as `id:`/`event:`/`data:` records, with heartbeat comments so proxies keep the stream open.
final class EventStreamSubscriber<StateType: HostedState>: TCPConnectionDelegate, UpgradedConnection, SubscriptionSink {
    private let tcp: TCPConnection
    private let loop: EventLoop
    /// Tells the server the connection closed (see `ConnectionTakeover`).
    private let closed: () -> Void
    private let hub: SubscriptionHub<StateType>
    private let selection: SubscriptionSelection
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let heartbeatEvery: UInt64
    private var lastWrite: UInt64
    private var isLagging = false

    private static var heartbeat: [UInt8] { Array(": heartbeat\n\n".utf8) }

    init(tcp: TCPConnection, loop: EventLoop, closed: @escaping () -> Void, hub: SubscriptionHub<StateType>, selection: SubscriptionSelection,
         configuration: ServerConfiguration, logger: Logger) {
        self.tcp = tcp
        self.loop = loop
        self.closed = closed
        self.hub = hub
        self.selection = selection
        self.configuration = configuration
        self.logger = logger
        heartbeatEvery = milliseconds(seconds: configuration.heartbeatInterval)
        lastWrite = loop.now
        super.init()
        tcp.delegate = self
    }

    func start(since: UInt64?, history: String?) {
        // A browser's EventSource reconnects after this many milliseconds.
        tcp.write(Array("retry: 1000\n\n".utf8))
        for message in hub.subscribe(self, to: selection, since: since, history: history, budget: configuration.maxUnsentBytes) { write(message.serverSentEvent) }
        // The client says nothing more; reading lets us notice when it goes away.
        tcp.startReading()
    }

    private func write(_ bytes: [UInt8]) {
        lastWrite = loop.now
        hub.counters.pushed(bytes.count)
        tcp.write(bytes)
    }

    func deliver(_ message: SubscriberMessage) {
        guard !isLagging, !tcp.isClosed else { return }
        let event = message.serverSentEvent
        // Behind means bytes still waiting past the bound; one large record to an idle socket is not.
        guard tcp.queuedBytes == 0 || tcp.queuedBytes + event.count <= configuration.maxUnsentBytes else {
            hub.counters.fellBehind(configuration.slowConsumerPolicy)
            switch configuration.slowConsumerPolicy {
            case .snapshot:
                isLagging = true
                logger.notice("slow event stream: dropping its records until it drains", metadata: ["unsent": "\(tcp.queuedBytes)"])
            case .close:
                logger.notice("slow event stream closed", metadata: ["unsent": "\(tcp.queuedBytes)"])
                tcp.close()
            }
            return
        }
        write(event)
    }

    // MARK: TCPConnectionDelegate
    // (What a client sends on an event stream is ignored: reads keep the base's do-nothing.)

    override func connectionDidEnd(_ connection: TCPConnection) {
        tcp.close()
    }

    override func connectionDidDrain(_ connection: TCPConnection) {
        guard isLagging else { return }
        isLagging = false
        write(hub.snapshot(for: selection).serverSentEvent)
    }

    override func connectionDidClose(_ connection: TCPConnection) {
        hub.unsubscribe(self, from: selection)
        closed()
    }

    // MARK: UpgradedConnection

    func tick(now: UInt64) {
        if now >= lastWrite + heartbeatEvery, !tcp.isClosed { write(Self.heartbeat) }
    }

    func serverIsShuttingDown() {
        tcp.closeAfterWriting()
    }

    func close() {
        tcp.close()
    }
}
