import Logging

/// Logs one structured line per request (method, path, status, bytes, microseconds, request id, and
/// the token's name, never its secret) when the level is info or finer. (The server counts every
/// answer for `/metrics` itself, logged or not.) With `lines`, the line is written by it rather
/// than through the logger (`RoutineLogLines.standardError`).
struct RequestLogger: HTTPMiddleware {
    let logger: Logger
    let lines: LogLineWriter?
    /// Asked once: reading a logger's level goes through its handler, for every request.
    private let logsRequests: Bool

    init(logger: Logger, lines: LogLineWriter? = nil) {
        self.logger = logger
        self.lines = lines
        logsRequests = Self.logsRequests(logger)
    }

    /// Whether `logger` takes request lines at all (a server leaves the middleware out when not).
    static func logsRequests(_ logger: Logger) -> Bool { logger.logLevel <= .info }

    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        // Not logging: nothing to wrap, so no closure to allocate.
        guard logsRequests else { return next(request, context, respond) }
        if let lines {
            return next(request, context) { response in
                lines.request(method: request.method.name, path: request.path, status: response.status.code, bytes: response.body.count,
                              id: context.id, token: context.principal?.name ?? "-",
                              microseconds: (MonotonicClock.nanoseconds() - context.receivedAt) / 1000)
                respond(response)
            }
        }
        next(request, context) { [logger] response in
            let nanoseconds = MonotonicClock.nanoseconds() - context.receivedAt
            // Building the metadata costs more than the rest of a small request: only when read.
            logger.info("request", metadata: [
                "method": "\(request.method.name)",
                "path": "\(request.path)",
                "status": "\(response.status.code)",
                "bytes": "\(response.body.count)",
                "us": "\(nanoseconds / 1000)",
                "request-id": "\(context.id)",
                "token": "\(context.principal?.name ?? "-")",
            ])
            respond(response)
        }
    }
}
