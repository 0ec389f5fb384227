@testable import ReactorServer
import XCTest

/// Routing without sockets: the route table fills in a request's route and scope, hands it to its
/// endpoint, and answers what no route takes itself (404, 405 with `Allow`, `OPTIONS`).
final class RoutingTests: XCTestCase {
    private func table() -> RouteTable {
        var router = Router()
        router.add(.get, "/state", scope: .read) { _, _, respond in respond(.json(Array("get state".utf8))) }
        router.add(.post, "/events", scope: .fire) { _, _, respond in respond(.json(Array("post events".utf8))) }
        router.add(.get, "/events", scope: .read) { _, _, respond in respond(.json(Array("get events".utf8))) }
        router.add(.get, "/livez", scope: nil) { _, _, respond in respond(.json(Array("live".utf8))) }
        return router.table
    }

    private struct Routed {
        let response: HTTPResponse
        let context: RequestContext
        let table: RouteTable
        var body: String { String(decoding: response.body, as: UTF8.self) }
        var path: String? { context.routeIndex < 0 ? nil : table.path(at: context.routeIndex) }
        func header(_ name: String) -> String? { response.headers.first { $0.name == name }?.value }
    }

    private func route(_ method: HTTPMethod, _ target: String) -> Routed {
        let table = table()
        let request = HTTPRequest(method: method, target: target)
        let context = RequestContext(id: 1, receivedAt: 0, connection: nil, sequence: 0, isHead: method == .head, keepAliveHeader: false)
        table.route(request, into: context)
        var answer: HTTPResponse?
        table.respond(to: request, context: context) { answer = $0 }
        return Routed(response: answer!, context: context, table: table)
    }

    func testAPathAndMethodReachTheirRouteWithItsScope() {
        let post = route(.post, "/events")
        XCTAssertEqual(post.body, "post events")
        XCTAssertEqual(post.context.scope, .fire)
        XCTAssertEqual(post.path, "/events")
        let get = route(.get, "/events")
        XCTAssertEqual(get.body, "get events")
        XCTAssertEqual(get.context.scope, .read)
        let livez = route(.get, "/livez?verbose=1")
        XCTAssertEqual(livez.body, "live", "the query is not part of the path")
        XCTAssertNil(livez.context.scope, "anyone may")
    }

    func testHeadGoesWhereGetGoes() {
        let head = route(.head, "/state")
        XCTAssertEqual(head.body, "get state")
        XCTAssertEqual(head.context.scope, .read)
    }

    func testAnUnknownPathIs404() {
        for target in ["/nope", "/state/", "/State", "/stat", "/statez", "/"] {
            let routed = route(.get, target)
            XCTAssertEqual(routed.response.status.code, 404, target)
            XCTAssertEqual(routed.response.contentType?.value, "application/problem+json", target)
            XCTAssertNil(routed.path, target)
            XCTAssertNil(routed.context.scope, target)
        }
    }

    func testAMethodThePathDoesNotTakeIs405WithWhatItTakes() {
        let routed = route(.delete, "/state")
        XCTAssertEqual(routed.response.status.code, 405)
        XCTAssertEqual(routed.header("Allow"), "GET, HEAD, OPTIONS")
        XCTAssertEqual(routed.path, "/state", "the path is known, for logs and metrics")
        XCTAssertEqual(route(.put, "/events").header("Allow"), "POST, GET, HEAD, OPTIONS")
    }

    func testOptionsListsThePathsMethods() {
        let routed = route(.options, "/events")
        XCTAssertEqual(routed.response.status.code, 204)
        XCTAssertEqual(routed.header("Allow"), "POST, GET, HEAD, OPTIONS")
    }
}
