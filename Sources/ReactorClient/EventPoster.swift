import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fires events with `POST /events`, for the Server-Sent Events transport, which cannot send.
///
/// Its session is its own, so that closing the stream it goes with lets the posts in flight finish:
/// their answers still count.
final class EventPoster: Sendable {
    private let session: URLSession
    private let endpoints: RemoteEndpoints
    /// Set by `finish()`. A session that was invalidated must not be given tasks (Apple's Foundation
    /// raises an exception), so starting one and finishing are done under this lock.
    private let isFinished = Mutex(false)

    init(endpoints: RemoteEndpoints, configuration: URLSessionConfiguration) {
        self.endpoints = endpoints
        session = URLSession(configuration: configuration)
    }

    /// Posts `event`; `completion` gets the version it was applied at, the server's problem, or
    /// `RemoteCoreError.connectionLost` when no answer came.
    ///
    /// Each post carries an `Idempotency-Key`, so that one that got no answer at all (a keep-alive
    /// connection the server had just closed, say) is sent once more: the server applies it at most
    /// once, and answers the retry with the first answer.
    func post(_ event: JSON, completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void) {
        var request = endpoints.fire(event)
        request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
        send(request, retries: 1, completion: completion)
    }

    private func send(_ request: URLRequest, retries: Int, completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void) {
        let started = isFinished.withLock { isFinished in
            guard !isFinished else { return false }
            session.dataTask(with: request) { [self] body, response, error in
                if response == nil, retries > 0 {
                    return send(request, retries: retries - 1, completion: completion)
                }
                completion(Self.outcome(body: body ?? Data(), response: response, error: error))
            }.resume()
            return true
        }
        if !started { completion(.failure(RemoteCoreError.connectionLost)) }
    }

    /// Lets the posts in flight finish, then frees the session.
    func finish() {
        isFinished.withLock { isFinished in
            guard !isFinished else { return }
            isFinished = true
            session.finishTasksAndInvalidate()
        }
    }

    private static func outcome(body: Data, response: URLResponse?, error: (any Error)?) -> Result<UInt64, any Error> {
        guard error == nil, let response = response as? HTTPURLResponse else {
            return .failure(RemoteCoreError.connectionLost)
        }
        guard response.statusCode == 200 else {
            return .failure(RemoteProblem(httpStatus: response.statusCode, body: body))
        }
        guard let answer = try? JSON(parsing: [UInt8](body)), let number = answer["version"]?.int64Value,
              let version = UInt64(exactly: number) else {
            return .failure(RemoteCoreError.invalidAnswer("POST /events answered \(String(decoding: body.prefix(200), as: UTF8.self))"))
        }
        return .success(version)
    }
}
