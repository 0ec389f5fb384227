import Logging
import Reactor

/// `GET /state`: the published state, `ETag` = its version, `If-None-Match` → 304, `?path=` a JSON
/// Pointer, `?version=N` the state as it was at version N (from `HistoryService`).
final class StateService<StateType: HostedState> {
    private let pipeline: CommitPipeline<StateType>
    private let history: HistoryService<StateType>
    private let logger: Logger
    /// The state's JSON, kept for the version it was made from: reads between events reuse it.
    private var encoded: (version: UInt64, json: JSON, bytes: [UInt8])?

    init(pipeline: CommitPipeline<StateType>, history: HistoryService<StateType>, logger: Logger) {
        self.pipeline = pipeline
        self.history = history
        self.logger = logger
    }

    func register(in router: inout Router) {
        router.add(.get, "/state", scope: .read) { [self] request, _, respond in
            getState(request, respond: respond)
        }
    }

    private func getState(_ request: HTTPRequest, respond: @escaping (HTTPResponse) -> Void) {
        let pointer: JSONPointer?
        let path: String?
        switch Problem.parameter("path", of: request) {
        case .success(let value): path = value
        case .failure(let problem): return respond(problem.response)
        }
        if let path {
            do {
                pointer = try JSONPointer(path)
            } catch {
                return respond(Problem.invalidParameter("path", "path must be a JSON Pointer (RFC 6901) such as /players/0: \(error.message)").response)
            }
        } else {
            pointer = nil
        }
        if request.queryValue("version") != nil {
            switch HistoryService<StateType>.integer(request, "version", default: 0, in: 0...UInt64(Int64.max)) {
            case .failure(let problem):
                return respond(problem.response)
            case .success(let version) where version != pipeline.publishedVersion:
                return history.state(at: version, pointer: pointer, respond: respond)
            case .success:
                break
            }
        }
        respond(currentState(request, pointer: pointer))
    }

    private func currentState(_ request: HTTPRequest, pointer: JSONPointer?) -> HTTPResponse {
        let state: (version: UInt64, json: JSON, bytes: [UInt8])
        do {
            state = try encodedState()
        } catch {
            logger.error("cannot encode the state", metadata: ["error": "\(error)"])
            return Problem.internalError("the state cannot be encoded as JSON: \(error)").response
        }
        let etag = "\"\(state.version)\""
        if let match = request.headers["If-None-Match"], EntityTag.matches(match, etag: etag) {
            return HTTPResponse(status: .notModified, headers: [("ETag", etag)])
        }
        var response: HTTPResponse
        if let pointer, !pointer.isRoot {
            guard let value = state.json[pointer] else { return Problem.pathNotFound(pointer.string).response }
            response = .json(value.jsonBytes)
        } else {
            response = .json(state.bytes)
        }
        response.addHeader("ETag", etag)
        return response
    }

    private func encodedState() throws -> (version: UInt64, json: JSON, bytes: [UInt8]) {
        let (version, state) = pipeline.published
        if let encoded, encoded.version == version { return encoded }
        let json = try state.jsonValue()
        let fresh = (version, json, json.jsonBytes)
        encoded = fresh
        return fresh
    }
}
