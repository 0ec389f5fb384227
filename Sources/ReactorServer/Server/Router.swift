/// Routes a request by its exact path, then by method: 404 for an unknown path, 405 with `Allow`
/// for a method the path does not take. HEAD goes wherever GET does; OPTIONS lists the methods.
public struct Router {
    struct Route {
        let method: HTTPMethod
        let scope: Scope?
        let endpoint: Endpoint
    }

    /// The routes of one path, and the path's number (for metrics kept in arrays, not dictionaries).
    struct PathRoutes {
        let path: String
        let index: Int
        var routes: [Route]
    }

    private var routes: [String: PathRoutes] = [:]
    /// Every routed path, by its number.
    private(set) var paths: [String] = []

    public init() {}

    /// Serves `method` on `path` with `responder`; the client needs `scope` (nil: anyone may).
    public mutating func add(_ method: HTTPMethod, _ path: String, scope: Scope?, _ responder: @escaping HTTPResponder) {
        if routes[path] == nil {
            routes[path] = PathRoutes(path: path, index: paths.count, routes: [])
            paths.append(path)
        }
        routes[path]!.routes.append(Route(method: method, scope: scope, endpoint: Endpoint(respond: responder)))
    }

    /// Fills in the context's route, scope and endpoint for `request`.
    func route(_ request: HTTPRequest, into context: RequestContext) {
        let path = request.path
        guard let entry = routes[String(path)] else {
            context.endpoint = Endpoint(respond: Self.answer(.notFound(path)))
            return
        }
        let candidates = entry.routes
        context.route = entry.path
        context.routeIndex = entry.index
        let method = request.method == .head ? HTTPMethod.get : request.method
        if let route = candidates.first(where: { $0.method == method }) {
            context.scope = route.scope
            context.endpoint = route.endpoint
            return
        }
        let allowed = candidates.map(\.method) + (candidates.contains { $0.method == .get } ? [.head] : []) + [.options]
        if request.method == .options {
            let allow = allowed.map(\.name).joined(separator: ", ")
            context.endpoint = Endpoint { _, _, respond in respond(HTTPResponse(status: .noContent, headers: [("Allow", allow)])) }
        } else {
            context.endpoint = Endpoint(respond: Self.answer(.methodNotAllowed(request.method, path: path, allowed: allowed)))
        }
    }

    static func answer(_ problem: Problem) -> HTTPResponder {
        { _, _, respond in respond(problem.response) }
    }
}
