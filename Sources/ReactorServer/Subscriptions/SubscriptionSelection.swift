/// What a subscriber watches: a sub-tree of the state (`?path=`), as patches or as whole states (`?mode=`).
struct SubscriptionSelection: Hashable {
    enum Mode: String, Hashable {
        /// RFC 6902 patches after the snapshot.
        case patch
        /// The whole selected value on every change.
        case state
    }

    let path: JSONPointer
    let mode: Mode

    /// What a subscriber asked for: the selection, and where it resumes (`since`, of `history`).
    struct Request {
        let selection: SubscriptionSelection
        let since: UInt64?
        let history: String?
    }

    /// Reads `path`, `mode`, `since` and `history` from a request's query, and the stream's
    /// `Last-Event-ID` (`EventStreamID`), which takes the place of `since` and `history`; the
    /// problem names the bad parameter.
    static func parse(_ request: HTTPRequest, lastEventID: String? = nil) -> Result<Request, Problem> {
        let parameters: (path: String?, mode: String?, since: String?, history: String?)
        switch (Problem.parameter("path", of: request), Problem.parameter("mode", of: request), Problem.parameter("since", of: request),
                Problem.parameter("history", of: request)) {
        case (.success(let path), .success(let mode), .success(let since), .success(let history)): parameters = (path, mode, since, history)
        case (.failure(let problem), _, _, _), (_, .failure(let problem), _, _), (_, _, .failure(let problem), _), (_, _, _, .failure(let problem)):
            return .failure(problem)
        }
        if let history = parameters.history, !HistoryName.isWellFormed(history) {
            return .failure(.invalidParameter("history", "history must be the name a snapshot gave (\"history\"), not \"\(history)\""))
        }
        var path = JSONPointer.root
        if let text = parameters.path {
            do {
                path = try JSONPointer(text)
            } catch {
                return .failure(.invalidParameter("path", "path must be a JSON Pointer (RFC 6901) such as /players/0: \(error.message)"))
            }
        }
        let mode: Mode
        switch parameters.mode {
        case nil, "patch": mode = .patch
        case "state": mode = .state
        case let other?: return .failure(.invalidParameter("mode", "mode must be patch or state, not \"\(other)\""))
        }
        var since: UInt64?
        if let text = parameters.since {
            // Versions are written as JSON integers (Int64) everywhere; a larger one cannot exist.
            guard let version = UInt64(text), version <= UInt64(Int64.max) else {
                return .failure(.invalidParameter("since", "since must be a version number from 0 to \(Int64.max), not \"\(text)\""))
            }
            since = version
        }
        var history = parameters.history
        if let lastEventID {
            // A browser's EventSource reconnects to the URL it was opened with, `since` and all, and
            // names in Last-Event-ID the last event it took since: the header is the newer word.
            // An id this server cannot read (another server's, of another format) resumes nowhere:
            // a fresh snapshot, rather than a 400 that would end the EventSource for good.
            if let id = EventStreamID.parse(lastEventID) {
                since = id.version
                history = id.history ?? history
            } else {
                (since, history) = (0, HistoryName.unknown)
            }
        }
        return .success(Request(selection: SubscriptionSelection(path: path, mode: mode), since: since, history: history))
    }

    /// Whether `operation` may have changed the selected part: a move changes where it comes from too.
    func isTouched(by operation: JSONPatchOperation) -> Bool {
        if case .move(let from, _) = operation, isTouched(by: from) { return true }
        return operation.isTest ? false : isTouched(by: operation.path)
    }

    /// Whether a change at `changed` (an operation's path) may change what this selection sees.
    func isTouched(by changed: JSONPointer) -> Bool {
        if changed.tokens.starts(with: path.tokens) || path.tokens.starts(with: changed.tokens) { return true }
        // An insertion or removal in an array above the selection shifts what its index points at.
        guard let last = changed.lastToken, last == "-" || JSONPointer.arrayIndex(from: last) != nil else { return false }
        return path.tokens.starts(with: changed.tokens.dropLast())
    }
}
