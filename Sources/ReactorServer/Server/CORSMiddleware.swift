/// Lets browsers on the configured origins call the API: answers preflights and marks responses.
struct CORSMiddleware: HTTPMiddleware {
    let origins: Set<String>

    private static let allowedHeaders = "Authorization, Content-Type, Idempotency-Key, If-None-Match, Last-Event-ID"
    private static let exposedHeaders = "ETag, Retry-After, Idempotent-Replayed, Reactor-Oldest-Version, Reactor-Version"

    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        guard let origin = request.headers["Origin"], origins.contains("*") || origins.contains(origin) else {
            // Without the allowing headers, this answer too depends on Origin: a shared cache must
            // not hand it to a page on an allowed origin (nor theirs to this one).
            return next(request, context) { response in
                var response = response
                response.addHeader("Vary", "Origin")
                respond(response)
            }
        }
        if request.method == .options, let method = request.headers["Access-Control-Request-Method"] {
            var response = HTTPResponse(status: .noContent)
            response.addHeader("Access-Control-Allow-Origin", origin)
            response.addHeader("Access-Control-Allow-Methods", method)
            response.addHeader("Access-Control-Allow-Headers", Self.allowedHeaders)
            response.addHeader("Access-Control-Max-Age", "600")
            response.addHeader("Vary", "Origin")
            return respond(response)
        }
        next(request, context) { response in
            var response = response
            response.addHeader("Access-Control-Allow-Origin", origin)
            response.addHeader("Access-Control-Expose-Headers", Self.exposedHeaders)
            response.addHeader("Vary", "Origin")
            respond(response)
        }
    }
}
