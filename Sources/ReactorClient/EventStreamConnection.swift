import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A subscription over Server-Sent Events (`GET /stream`), read as it arrives through a URL session
/// data delegate (which, unlike `bytes(for:)`, swift-corelibs-foundation has). The stream cannot
/// send: fires go by `POST /events`.
///
/// Each connection has a URL session of its own, whose delegate it is; `cancel()` invalidates the
/// session, which breaks the session's strong reference back to the connection.
///
/// A stream silent for longer than `idleTimeout` is ended by a watchdog, as reactord sends a heartbeat
/// after 15 s without output.
///
/// @unchecked Sendable: `parser`, `httpStatus`, `errorBody` are confined to the session's serial callback queue, `session` is set before the task runs, the rest is `let` or atomic.
final class EventStreamConnection: NSObject, RemoteConnection, URLSessionDataDelegate, @unchecked Sendable {
    let transport = RemoteTransport.serverSentEvents
    private let request: URLRequest
    private let configuration: URLSessionConfiguration
    private let report: @Sendable (ConnectionEvent) -> Void
    private let poster: EventPoster
    /// Set by the first `.ended` or by `cancel()`; nothing is reported after it.
    private let isOver = Atomic<Bool>(false)
    private let idleTimeout: Duration
    /// When the stream last brought anything (`DispatchTime` nanoseconds), heartbeats included.
    private let lastHeard = Atomic<UInt64>(0)
    private var session: URLSession?
    private var parser: EventStreamParser
    /// The status of the answer, once its first bytes arrived.
    private var httpStatus: Int?
    /// The start of an error answer's body: its problem.
    private var errorBody = Data()

    /// - Parameter idleTimeout: the longest silence before the stream counts as dropped.
    init(endpoints: RemoteEndpoints, since: ResumePoint?, configuration: URLSessionConfiguration, idleTimeout: Duration,
         maximumMessageBytes: Int, report: @escaping @Sendable (ConnectionEvent) -> Void) {
        var request = endpoints.stream(since: since)
        // The watchdog below tells a silent stream; this is only a backstop. (A request's timeout is not
        // the same thing everywhere: swift-corelibs-foundation rounds it to whole seconds.)
        request.timeoutInterval = max(60, idleTimeout.seconds * 2)
        self.request = request
        self.configuration = configuration
        self.report = report
        self.idleTimeout = idleTimeout
        poster = EventPoster(endpoints: endpoints, configuration: configuration)
        parser = EventStreamParser(maximumLineBytes: maximumMessageBytes)
    }

    func start() {
        // One serial callback queue keeps the bytes in the order they arrived.
        let callbacks = OperationQueue()
        callbacks.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: callbacks)
        self.session = session
        lastHeard.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        session.dataTask(with: request).resume()
        watchForSilence()
    }

    func send(fire event: JSON, id: String) {
        poster.post(event) { [report] result in report(.fireAnswered(id: id, result)) }
    }

    func cancel() {
        isOver.store(true, ordering: .sequentiallyConsistent)
        session?.invalidateAndCancel()
        poster.finish()
    }

    /// Ends the stream once it has been silent for longer than the idle timeout: the connection died
    /// without a word (a sleeping laptop, a proxy that dropped it), so the remote core reconnects.
    private func watchForSilence() {
        DispatchQueue.global().asyncAfter(deadline: .now() + (idleTimeout / 4).dispatchInterval) { [weak self] in
            guard let self, !isOver.load(ordering: .sequentiallyConsistent) else { return }
            // Bytes may have arrived since `now` was read: that is no silence at all.
            let (now, heard) = (DispatchTime.now().uptimeNanoseconds, lastHeard.load(ordering: .relaxed))
            let silence = now > heard ? now - heard : 0
            guard Duration.nanoseconds(silence) <= idleTimeout else {
                return end(.dropped("the event stream was silent for longer than \(idleTimeout)"))
            }
            watchForSilence()
        }
    }

    /// Reports the end once, whichever callback tells of it first.
    private func end(_ ending: ConnectionEnd) {
        guard isOver.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        report(.ended(ending))
    }

    // MARK: URLSessionDataDelegate

    // The status is read from the task when the first bytes arrive rather than in the delegate method
    // for the response, whose completion handler is declared differently across Foundations.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !isOver.load(ordering: .sequentiallyConsistent) else { return }
        lastHeard.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        if httpStatus == nil {
            httpStatus = (dataTask.response as? HTTPURLResponse)?.statusCode ?? 0
            if httpStatus == 200 { report(.opened) }
        }
        guard httpStatus == 200 else {
            if errorBody.count < 64 << 10 { errorBody.append(data) }
            return
        }
        do {
            for record in try parser.feed(data) { report(.message(record.data)) }
        } catch {
            end(.dropped(error.description))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let status = httpStatus ?? (task.response as? HTTPURLResponse)?.statusCode
        if let status, status != 200 {
            end(.answered(RemoteProblem(httpStatus: status, body: errorBody)))
        } else if let error {
            end(.dropped("the event stream failed: \(error.localizedDescription)"))
        } else {
            end(.dropped("the server ended the event stream"))
        }
    }
}
