import Logging
import Reactor

/// Fires an event given as JSON on behalf of `origin`, and calls back with the version it was
/// published at or the problem it was refused with: the server's event path (`EventPath.fire`).
typealias FireEvent = (_ event: JSON, _ origin: Principal?, _ answer: @escaping (Result<UInt64, Problem>) -> Void) -> Void

/// A client subscribed over WebSocket: gets its selection's messages, may fire events over the
/// same socket, and is held to the slow-consumer policy.
final class WebSocketSubscriber<StateType: HostedState>: WebSocketMessageHandler, SubscriptionSink {
    private let connection: WebSocketServerConnection
    private let hub: SubscriptionHub<StateType>
    private let fire: FireEvent
    private let selection: SubscriptionSelection
    private let principal: Principal?
    private let mayFire: Bool
    private let configuration: ServerConfiguration
    private let logger: Logger
    /// Behind: queued messages were dropped, and a fresh snapshot goes out once the socket drains.
    private var isLagging = false
    /// Events fired over this socket and not answered yet.
    private var firesInFlight = 0
    var owesReplies: Bool { firesInFlight > 0 }

    init(connection: WebSocketServerConnection, hub: SubscriptionHub<StateType>, fire: @escaping FireEvent,
         selection: SubscriptionSelection, principal: Principal?, mayFire: Bool, configuration: ServerConfiguration, logger: Logger) {
        self.connection = connection
        self.hub = hub
        self.fire = fire
        self.selection = selection
        self.principal = principal
        self.mayFire = mayFire
        self.configuration = configuration
        self.logger = logger
    }

    func start(since: UInt64?, history: String?, leftover: [UInt8]) {
        connection.handler = self
        for message in hub.subscribe(self, to: selection, since: since, history: history, budget: configuration.maxUnsentBytes) { send(connection.frame(for: message, live: false)) }
        connection.start(leftover: leftover)
    }

    // MARK: SubscriptionSink

    func deliver(_ message: SubscriberMessage) {
        guard !isLagging, !connection.isClosing else { return }
        let frame = connection.frame(for: message, live: true)
        // Behind means bytes still waiting past the bound; one large message to an idle socket is not.
        let unsent = connection.unsentBytes
        guard unsent == 0 || unsent + frame.bytes.count <= configuration.maxUnsentBytes else {
            return fallBehind()
        }
        send(frame)
    }

    private func send(_ frame: WebSocketServerConnection.PreparedFrame) {
        hub.counters.pushed(frame.bytes.count)
        connection.send(frame)
    }

    private func fallBehind() {
        hub.counters.fellBehind(configuration.slowConsumerPolicy)
        switch configuration.slowConsumerPolicy {
        case .snapshot:
            isLagging = true
            logger.notice("slow subscriber: dropping its patches until it drains", metadata: ["unsent": "\(connection.unsentBytes)", "token": "\(principal?.name ?? "-")"])
        case .close:
            logger.notice("slow subscriber closed", metadata: ["unsent": "\(connection.unsentBytes)", "token": "\(principal?.name ?? "-")"])
            connection.close(.slowConsumer, reason: "too slow: more than \(configuration.maxUnsentBytes) bytes unsent")
        }
    }

    // MARK: WebSocketMessageHandler

    func webSocketDidDrain(_ connection: WebSocketServerConnection) {
        guard isLagging else { return }
        isLagging = false
        send(connection.frame(for: hub.snapshot(for: selection), live: false))
    }

    func webSocketDidClose(_ connection: WebSocketServerConnection) {
        hub.unsubscribe(self, from: selection)
    }

    func webSocket(_ connection: WebSocketServerConnection, received opcode: WebSocketOpcode, payload: [UInt8]) {
        guard opcode == .text else {
            return connection.close(.unsupportedData, reason: "this endpoint speaks JSON text messages")
        }
        let message: JSON
        do {
            message = try JSONParser.carrier.parse(payload)
        } catch {
            return reply(error: .malformedJSON(error), id: .null)
        }
        let id = message["id"] ?? .null
        if message["type"] == "ping" {
            // Answered at once, after what was already queued for this subscriber: a client that
            // sees no WebSocket pings (a browser's) learns that the connection still delivers.
            return reply(JSON.object(["type": "pong", "id": id]))
        }
        guard message["type"] == "fire" else {
            return reply(error: .invalidParameter("type", "a client message is {\"type\":\"fire\",\"id\":...,\"event\":{...}} or {\"type\":\"ping\",\"id\":...}"), id: id)
        }
        guard mayFire else {
            return reply(error: .forbidden("token \(principal?.name ?? "-") lacks the fire scope"), id: id)
        }
        guard let eventJSON = message["event"] else {
            return reply(error: .invalidEvent("the fire message has no \"event\""), id: id)
        }
        guard !connection.isDraining else {
            return reply(error: .shuttingDown(), id: id)
        }
        // Acknowledged once published (with a journal, once written down), like an HTTP answer;
        // a server shutting down sends the answers it owes before it closes the connection.
        firesInFlight += 1
        fire(eventJSON, principal) { [self] outcome in
            firesInFlight -= 1
            switch outcome {
            case .success(let version): reply(JSON.object(["type": "ack", "id": id, "version": .integer(Int64(version))]))
            case .failure(let problem): reply(error: problem, id: id)
            }
            connection.closeIfDrained()
        }
    }

    private func reply(error problem: Problem, id: JSON) {
        reply(JSON.object(["type": "error", "id": id, "problem": problem.json]))
    }

    /// An answer the client is owed cannot be dropped, as a patch can: a client that fires and
    /// reads none of its answers is closed once more than `maxUnsentBytes` of them wait.
    private func reply(_ message: JSON) {
        guard !connection.isClosing else { return }
        let bytes = message.jsonBytes
        let unsent = connection.unsentBytes
        guard unsent == 0 || unsent + bytes.count <= configuration.maxUnsentBytes else {
            logger.notice("slow client closed: it reads none of its answers", metadata: ["unsent": "\(unsent)", "token": "\(principal?.name ?? "-")"])
            return connection.close(.slowConsumer, reason: "too slow: more than \(configuration.maxUnsentBytes) bytes unsent")
        }
        connection.send(text: bytes)
    }
}
