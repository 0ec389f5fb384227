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

    /// In a class, so that a lookup borrows the tables: a struct's arrays are retained by every
    /// closure that captures it, and a lookup runs for every request.
    private var table = RouteTable()

    /// Every routed path, by its number.
    var paths: [String] { table.routes.map(\.path) }

    public init() {}

    /// Serves `method` on `path` with `responder`; the client needs `scope` (nil: anyone may).
    public mutating func add(_ method: HTTPMethod, _ path: String, scope: Scope?, _ responder: @escaping HTTPResponder) {
        if !isKnownUniquelyReferenced(&table) { table = table.copy() }
        table.add(Route(method: method, scope: scope, endpoint: Endpoint(respond: responder)), at: path)
    }

    /// The path routed under number `index`.
    func path(at index: Int) -> String { table.routes[index].path }

    /// Fills in the context's route, scope and endpoint for `request`.
    func route(_ request: HTTPRequest, into context: RequestContext) {
        table.route(request, into: context)
    }

    static func answer(_ problem: Problem) -> HTTPResponder {
        { _, _, respond in respond(problem.response) }
    }
}

/// A router's routes, by number. A server has a dozen paths or so: comparing their bytes beats
/// hashing the request's.
private final class RouteTable {
    private(set) var routes: [Router.PathRoutes] = []
    /// Every path's bytes, one after another, and where each lies: one buffer, so that comparing the
    /// request's path with each costs no reference counting.
    private var pathBytes: [UInt8] = []
    private var pathRanges: [Range<Int>] = []

    init() {}

    func copy() -> RouteTable {
        let copy = RouteTable()
        (copy.routes, copy.pathBytes, copy.pathRanges) = (routes, pathBytes, pathRanges)
        return copy
    }

    func add(_ route: Router.Route, at path: String) {
        if let index = routes.firstIndex(where: { $0.path == path }) {
            routes[index].routes.append(route)
        } else {
            routes.append(Router.PathRoutes(path: path, index: routes.count, routes: [route]))
            pathRanges.append(pathBytes.count..<pathBytes.count + path.utf8.count)
            pathBytes.append(contentsOf: path.utf8)
        }
    }

    /// The number of `path`'s routes. (A number, not the entry: copying an entry out costs a retain
    /// and a release of each of its references, for every request.)
    private func entryIndex(for path: Substring) -> Int? {
        var path = path
        return path.withUTF8 { entryIndex(forBytes: $0) }
    }

    private func entryIndex(forBytes wanted: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let wantedStart = wanted.baseAddress else { return nil }
        return pathBytes.withUnsafeBufferPointer { all in
            pathRanges.firstIndex { $0.count == wanted.count && memcmp(all.baseAddress! + $0.lowerBound, wantedStart, wanted.count) == 0 }
        }
    }

    func route(_ request: HTTPRequest, into context: RequestContext) {
        let found = request.withOriginFormPath { entryIndex(forBytes: $0) } ?? entryIndex(for: request.path)
        guard let index = found else {
            context.endpoint = Endpoint(respond: Router.answer(.notFound(request.path)))
            return
        }
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
            context.endpoint = Endpoint(respond: Router.answer(.methodNotAllowed(request.method, path: request.path, allowed: allowed)))
        }
    }
}
