import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A subscription over WebSocket (`GET /subscribe`, subprotocol `reactor.v1`) on Foundation's
/// URLSessionWebSocketTask, which also carries the fire messages.
///
/// Each connection has a URL session of its own, whose delegate it is; `cancel()` invalidates the
/// session, which breaks the session's strong reference back to the connection.
///
/// @unchecked Sendable: `session` and `task` are set once by `start()`, before any callback; every other stored property is a `let` or atomic.
final class WebSocketConnection: NSObject, RemoteConnection, URLSessionWebSocketDelegate, @unchecked Sendable {
    let transport = RemoteTransport.webSocket
    private let request: URLRequest
    private let configuration: URLSessionConfiguration
    private let maximumMessageBytes: Int
    private let report: @Sendable (ConnectionEvent) -> Void
    /// Set by the first `.ended` or by `cancel()`; nothing is reported after it.
    private let isOver = Atomic<Bool>(false)
    private var session: URLSession?
    private var task: URLSessionWebSocketTask?

    init(endpoints: RemoteEndpoints, since: ResumePoint?, configuration: URLSessionConfiguration, maximumMessageBytes: Int,
         report: @escaping @Sendable (ConnectionEvent) -> Void) {
        request = endpoints.subscribe(since: since)
        self.configuration = configuration
        self.maximumMessageBytes = maximumMessageBytes
        self.report = report
    }

    func start() {
        // One serial callback queue keeps the messages in the order they arrived.
        let callbacks = OperationQueue()
        callbacks.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: callbacks)
        let task = session.webSocketTask(with: request)
        task.maximumMessageSize = maximumMessageBytes
        (self.session, self.task) = (session, task)
        task.resume()
        receive(on: task)
    }

    func send(fire event: JSON, id: String) {
        let message: JSON = ["type": "fire", "id": .string(id), "event": event]
        task?.send(.string(message.jsonString)) { [weak self] error in
            if let error { self?.end(.dropped("cannot send over the WebSocket: \(error.localizedDescription)")) }
        }
    }

    func cancel() {
        isOver.store(true, ordering: .sequentiallyConsistent)
        task?.cancel(with: .normalClosure, reason: nil)
        session?.invalidateAndCancel()
    }

    private func receive(on task: URLSessionWebSocketTask) {
        task.receive { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let message):
                guard case .string(let text) = message else {
                    return end(.dropped("a binary message, which reactord never sends"))
                }
                if !isOver.load(ordering: .sequentiallyConsistent) { report(.message(text)) }
                receive(on: task)
            case .failure(let error):
                end(ending(after: error))
            }
        }
    }

    /// Reports the end once, whichever of the callbacks that can tell of it comes first.
    private func end(_ ending: ConnectionEnd) {
        guard isOver.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        report(.ended(ending))
    }

    private func ending(after error: (any Error)?) -> ConnectionEnd {
        // swift-corelibs-foundation's answer for a ws:// URL when libcurl was built without WebSocket
        // support ("WebSockets not supported by libcurl"): no retry will change it.
        if let error = error as? URLError, error.code == .unsupportedURL { return .unsupported }
        // A refused handshake. URLSession keeps the body of a failed upgrade to itself, so the problem
        // is made up from the status.
        if let response = task?.response as? HTTPURLResponse, response.statusCode != 101 {
            return .answered(RemoteProblem(httpStatus: response.statusCode, body: Data()))
        }
        return .dropped(error.map { "the WebSocket failed: \($0.localizedDescription)" } ?? "the WebSocket closed")
    }

    // MARK: URLSessionWebSocketDelegate

    func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?) {
        if !isOver.load(ordering: .sequentiallyConsistent) { report(.opened) }
    }

    func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask,
                    didCloseWith closeCode: URLSessionWebSocketTask.CloseCode, reason: Data?) {
        end(.dropped("the server closed the WebSocket with code \(closeCode.rawValue)"))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        end(ending(after: error))
    }
}
