import CUV
import Logging

/// Logs one structured line per request: method, path, status, bytes, microseconds, request id, and
/// the token's name (never its secret).
struct RequestLogger: HTTPMiddleware {
    let logger: Logger

    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        // Building the metadata costs more than the rest of a small request: skip it when nobody reads it.
        guard logger.logLevel <= .info else { return next(request, context, respond) }
        next(request, context) { [logger] response in
            logger.info("request", metadata: [
                "method": "\(request.method.name)",
                "path": "\(request.path)",
                "status": "\(response.status.code)",
                "bytes": "\(response.body.count)",
                "us": "\((uv_hrtime() - context.receivedAt) / 1000)",
                "request-id": "\(context.id)",
                "token": "\(context.principal?.name ?? "-")",
            ])
            respond(response)
        }
    }
}
