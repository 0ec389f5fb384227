import CUV
import Logging

/// Accounts for every request: counts it and its duration by route and status for `/metrics`, and
/// logs one structured line (method, path, status, bytes, microseconds, request id, and the token's
/// name, never its secret) when the level is info or finer.
struct RequestLogger: HTTPMiddleware {
    let logger: Logger
    let metrics: ServerMetrics

    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        guard logger.logLevel <= .info else {
            // Without the log line the closure needs less: no copy of the request (and its buffers).
            return next(request, context) { [metrics] response in
                metrics.recordRequest(routeIndex: context.routeIndex, status: response.status.code,
                                      seconds: Double(uv_hrtime() - context.receivedAt) / 1e9)
                respond(response)
            }
        }
        next(request, context) { [logger, metrics] response in
            let nanoseconds = uv_hrtime() - context.receivedAt
            metrics.recordRequest(routeIndex: context.routeIndex, status: response.status.code, seconds: Double(nanoseconds) / 1e9)
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
