import Foundation

/// Routes a request by its exact path, then by method: 404 for an unknown path, 405 with `Allow`
/// for a method the path does not take. HEAD goes wherever GET does; OPTIONS lists the methods.
public struct Router {
    struct Route {
        let method: HTTPMethod
        let scope: Scope?
        let endpoint: Endpoint
    }

    /// The routes of one path.
    struct PathRoutes {
        let path: String
        var routes: [Route]
    }

    /// By number: a path's position is its number (for metrics kept in arrays, not dictionaries).
    private var routes: [PathRoutes] = []

    /// Every routed path, by its number.
    var paths: [String] { routes.map(\.path) }

    public init() {}

    /// Serves `method` on `path` with `responder`; the client needs `scope` (nil: anyone may).
    public mutating func add(_ method: HTTPMethod, _ path: String, scope: Scope?, _ responder: @escaping HTTPResponder) {
        let route = Route(method: method, scope: scope, endpoint: Endpoint(respond: responder))
        if let index = routes.firstIndex(where: { $0.path == path }) {
            routes[index].routes.append(route)
        } else {
            routes.append(PathRoutes(path: path, routes: [route]))
        }
    }

    /// The routes as they are now, ready for lookups.
    var table: RouteTable { RouteTable(routes) }

    static func answer(_ problem: Problem) -> HTTPResponder {
        { _, _, respond in respond(problem.response) }
    }
}

/// A router's routes, frozen for lookups. A class of constants: a lookup, which runs for every
/// request, borrows them, where a struct's arrays are retained by each closure that captures it.
/// A server has a dozen paths or so: comparing their bytes beats hashing the request's.
final class RouteTable {
    let routes: [Router.PathRoutes]
    /// Every path's bytes, one after another, and where each lies, in memory of the table's own: a
    /// lookup reads them through plain pointers, which (unlike arrays) cost no reference counting.
    private let pathBytes: UnsafeMutableBufferPointer<UInt8>
    private let pathRanges: UnsafeMutableBufferPointer<Range<Int>>
    /// Every route, path after path, and where each path's lie: a request's context notes its
    /// route's number, and the endpoint is called from here, neither copied into the context nor
    /// out of it (a retain and a release each, for every request).
    private let entries: UnsafeMutableBufferPointer<Router.Route>
    private let entryRanges: UnsafeMutableBufferPointer<Range<Int>>
    /// The entries' endpoints, unretained: `routes` holds them for as long as the table lives.
    private let endpoints: UnsafeMutableBufferPointer<Unmanaged<Endpoint>>

    init(_ routes: [Router.PathRoutes]) {
        self.routes = routes
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        var entries: [Router.Route] = []
        var entryRanges: [Range<Int>] = []
        for path in routes {
            ranges.append(bytes.count..<bytes.count + path.path.utf8.count)
            bytes.append(contentsOf: path.path.utf8)
            entryRanges.append(entries.count..<entries.count + path.routes.count)
            entries += path.routes
        }
        pathBytes = Self.buffer(holding: bytes)
        pathRanges = Self.buffer(holding: ranges)
        self.entries = Self.buffer(holding: entries)
        self.entryRanges = Self.buffer(holding: entryRanges)
        endpoints = Self.buffer(holding: entries.map { Unmanaged.passUnretained($0.endpoint) })
    }

    private static func buffer<Element>(holding elements: [Element]) -> UnsafeMutableBufferPointer<Element> {
        let buffer = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(elements.count, 1))
        _ = buffer.initialize(from: elements)
        return UnsafeMutableBufferPointer(rebasing: buffer[..<elements.count])
    }

    deinit {
        pathBytes.deallocate()
        pathRanges.deallocate()
        entries.deinitialize().deallocate()
        entryRanges.deallocate()
        endpoints.deallocate()
    }

    /// The path routed under number `index`.
    func path(at index: Int) -> String { routes[index].path }

    /// The number of `path`'s routes. (A number, not the entry: copying an entry out costs a retain
    /// and a release of each of its references, for every request.)
    private func entryIndex(for path: Substring) -> Int? {
        var path = path
        return path.withUTF8 { Self.entryIndex(forBytes: $0, in: pathBytes, at: pathRanges, count: routes.count) }
    }

    /// Static, with the table's buffers passed in: a closure that captured the table would retain it.
    private static func entryIndex(forBytes wanted: UnsafeBufferPointer<UInt8>, in pathBytes: UnsafeMutableBufferPointer<UInt8>,
                                   at pathRanges: UnsafeMutableBufferPointer<Range<Int>>, count: Int) -> Int? {
        guard let wantedStart = wanted.baseAddress, let all = pathBytes.baseAddress else { return nil }
        for index in 0..<count {
            let range = pathRanges[index]
            if range.count == wanted.count && RawBytes.equal(all + range.lowerBound, wantedStart, count: wanted.count) { return index }
        }
        return nil
    }

    /// Fills in the context's route and scope for `request`, and its endpoint when that is an
    /// answer of the router's own (404, 405, `OPTIONS`).
    func route(_ request: HTTPRequest, into context: RequestContext) {
        guard let index = pathIndex(of: request) else {
            if request.method == .options && request.target == "*" {
                // What the server allows in general: every method some route takes.
                let methods = Set(routes.flatMap { $0.routes.map(\.method) })
                let allowed = Set(methods.map(\.name) + (methods.contains(.get) ? ["HEAD"] : []) + ["OPTIONS"])
                let allow = allowed.sorted().joined(separator: ", ")
                context.endpoint = Endpoint { _, _, respond in respond(HTTPResponse(status: .noContent, headers: [("Allow", allow)])) }
            } else {
                context.endpoint = Endpoint(respond: Router.answer(Self.unrouted(request)))
            }
            return
        }
        context.routeIndex = index
        if let entry = entry(of: request, at: index) {
            context.scope = entries[entry].scope
            context.routeEntry = entry
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

    /// The scope the route of `request` needs; nil when it needs none, or no route takes it.
    func scope(of request: HTTPRequest) -> Scope? {
        guard let index = pathIndex(of: request), let entry = entry(of: request, at: index) else { return nil }
        return entries[entry].scope
    }

    /// The index of the path `request` names.
    private func pathIndex(of request: HTTPRequest) -> Int? {
        let (bytes, ranges, count) = (pathBytes, pathRanges, routes.count)
        if let found = request.withOriginFormPath({ Self.entryIndex(forBytes: $0, in: bytes, at: ranges, count: count) })
            ?? entryIndex(for: request.path) {
            return found
        }
        // `/%73tate` is `/state`: tried only once the path as sent named nothing.
        return HTTPPercentDecoding.decodingUnreserved(request.path).flatMap { entryIndex(for: $0) }
    }

    /// The entry that serves `request`'s method on the path at `index`.
    private func entry(of request: HTTPRequest, at index: Int) -> Int? {
        let method = request.method == .head ? HTTPMethod.get : request.method
        for entry in entryRanges[index] where entries[entry].method == method { return entry }
        return nil
    }

    /// The answer to a request no route takes: `CONNECT` and `TRACE` are methods reactord does not
    /// implement whatever the target (501); anything else names nothing here (404).
    private static func unrouted(_ request: HTTPRequest) -> Problem {
        switch request.method {
        case .connect, .trace: .notImplemented("reactord does not implement \(request.method.name)")
        default: .notFound(request.path)
        }
    }

    /// Hands the request to the endpoint `route(_:into:)` chose for it.
    func respond(to request: HTTPRequest, context: RequestContext, respond: @escaping (HTTPResponse) -> Void) {
        if context.routeEntry >= 0 {
            return endpoints[context.routeEntry].withBorrowed { $0.respond(request, context, respond) }
        }
        guard let endpoint = context.endpoint else {
            return respond(Problem.internalError("the request was not routed").response)
        }
        endpoint.respond(request, context, respond)
    }
}
