import Foundation

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

    /// By number. A server has a dozen paths or so: comparing their bytes beats hashing the request's.
    private var routes: [PathRoutes] = []
    private var pathBytes: [[UInt8]] = []
    /// Every routed path, by its number.
    var paths: [String] { routes.map(\.path) }

    public init() {}

    /// Serves `method` on `path` with `responder`; the client needs `scope` (nil: anyone may).
    public mutating func add(_ method: HTTPMethod, _ path: String, scope: Scope?, _ responder: @escaping HTTPResponder) {
        let route = Route(method: method, scope: scope, endpoint: Endpoint(respond: responder))
        if let index = routes.firstIndex(where: { $0.path == path }) {
            routes[index].routes.append(route)
        } else {
            routes.append(PathRoutes(path: path, index: routes.count, routes: [route]))
            pathBytes.append(Array(path.utf8))
        }
    }

    /// The number of `path`'s routes. (A number, not the entry: copying an entry out costs a retain
    /// and a release of each of its references, for every request.)
    private func entryIndex(for path: Substring) -> Int? {
        var path = path
        return path.withUTF8 { entryIndex(forBytes: $0) }
    }

    private func entryIndex(forBytes wanted: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !wanted.isEmpty else { return nil }
        return pathBytes.firstIndex { bytes in
            bytes.count == wanted.count && bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, wanted.baseAddress!, wanted.count) == 0 }
        }
    }

    /// Fills in the context's route, scope and endpoint for `request`.
    func route(_ request: HTTPRequest, into context: RequestContext) {
        let found = request.withOriginFormPath { entryIndex(forBytes: $0) } ?? entryIndex(for: request.path)
        guard let index = found else {
            context.endpoint = Endpoint(respond: Self.answer(.notFound(request.path)))
            return
        }
        context.route = routes[index].path
        context.routeIndex = index
        let method = request.method == .head ? HTTPMethod.get : request.method
        for route in routes[index].routes where route.method == method {
            context.scope = route.scope
            context.endpoint = route.endpoint
            return
        }
        let candidates = routes[index].routes
        let allowed = candidates.map(\.method) + (candidates.contains { $0.method == .get } ? [.head] : []) + [.options]
        if request.method == .options {
            let allow = allowed.map(\.name).joined(separator: ", ")
            context.endpoint = Endpoint { _, _, respond in respond(HTTPResponse(status: .noContent, headers: [("Allow", allow)])) }
        } else {
            context.endpoint = Endpoint(respond: Self.answer(.methodNotAllowed(request.method, path: request.path, allowed: allowed)))
        }
    }

    static func answer(_ problem: Problem) -> HTTPResponder {
        { _, _, respond in respond(problem.response) }
    }
}
