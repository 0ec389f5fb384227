@testable import ReactorServer
import XCTest

/// The auth middleware without sockets: a request's bearer token (header or `access_token`) against
/// the configured tokens and the route's scope.
final class AuthMiddlewareTests: XCTestCase {
    private let reader = AccessToken(name: "reader", secret: "r-secret", scopes: [.read])
    private let firer = AccessToken(name: "firer", secret: "f-secret", scopes: [.fire])
    private let admin = AccessToken(name: "admin", secret: "a-secret", scopes: [.admin])

    private struct Passage {
        /// Whether the request went on to the route.
        let reachedRoute: Bool
        let response: HTTPResponse
        /// Who the middleware found the request came from.
        let principal: String?
        var status: Int { response.status.code }
        var challenge: String? { response.headers.first { $0.name == "WWW-Authenticate" }?.value }
    }

    private func pass(_ target: String = "/state", authorization: String? = nil, scope: Scope?,
                      tokens: [AccessToken]? = nil) -> Passage {
        let headers = HTTPHeaders(authorization.map { [("Authorization", $0)] } ?? [])
        let request = HTTPRequest(method: .get, target: target, headers: headers)
        let context = RequestContext(id: 1, receivedAt: 0, connection: nil, sequence: 0, isHead: false, keepAliveHeader: false)
        context.scope = scope
        var reached = false
        var answer: HTTPResponse?
        AuthMiddleware(tokens: tokens ?? [reader, firer, admin]).handle(request, context: context, next: { _, _, respond in
            reached = true
            respond(HTTPResponse(status: .ok))
        }, respond: { answer = $0 })
        return Passage(reachedRoute: reached, response: answer!, principal: context.principal?.name)
    }

    func testAValidTokenWithTheScopePassesAndNamesItsClient() {
        let passage = pass(authorization: "Bearer r-secret", scope: .read)
        XCTAssertTrue(passage.reachedRoute)
        XCTAssertEqual(passage.status, 200)
        XCTAssertEqual(passage.principal, "reader")
        XCTAssertEqual(pass(authorization: "bEaReR f-secret", scope: .fire).principal, "firer", "the scheme's case does not matter")
        XCTAssertEqual(pass("/state?access_token=r-secret", scope: .read).principal, "reader", "for browsers' WebSockets and EventSources")
    }

    func testAdminMayDoEverything() {
        for scope in Scope.allCases {
            XCTAssertTrue(pass(authorization: "Bearer a-secret", scope: scope).reachedRoute, "\(scope)")
        }
    }

    func testNoTokenIs401WithAChallenge() {
        let passage = pass(scope: .read)
        XCTAssertFalse(passage.reachedRoute)
        XCTAssertEqual(passage.status, 401)
        XCTAssertEqual(passage.challenge, #"Bearer realm="reactord""#)
        XCTAssertEqual(passage.response.contentType?.value, "application/problem+json")
    }

    func testAWrongTokenIs401InvalidToken() {
        for authorization in ["Bearer wrong", "Bearer r-secre", "Bearer r-secret ", "Bearer R-SECRET", "Bearer "] {
            let passage = pass(authorization: authorization, scope: .read)
            XCTAssertFalse(passage.reachedRoute, authorization)
            XCTAssertEqual(passage.status, 401, authorization)
            XCTAssertNil(passage.principal, authorization)
        }
        XCTAssertEqual(pass(authorization: "Bearer wrong", scope: .read).challenge, #"Bearer realm="reactord", error="invalid_token""#)
    }

    func testAnotherSchemeIsNoToken() {
        let passage = pass(authorization: "Basic cmVhZGVyOnItc2VjcmV0", scope: .read)
        XCTAssertEqual(passage.status, 401)
        XCTAssertEqual(passage.challenge, #"Bearer realm="reactord""#)
    }

    func testATokenWithoutTheScopeIs403() {
        let passage = pass(authorization: "Bearer r-secret", scope: .fire)
        XCTAssertFalse(passage.reachedRoute)
        XCTAssertEqual(passage.status, 403)
        XCTAssertEqual(passage.principal, "reader", "known, though refused")
        XCTAssertEqual(pass(authorization: "Bearer f-secret", scope: .admin).status, 403)
    }

    func testARouteAnyoneMayUseAndAServerWithoutTokensLetEveryoneThrough() {
        XCTAssertTrue(pass(scope: nil).reachedRoute)
        XCTAssertTrue(pass(authorization: "Bearer wrong", scope: nil).reachedRoute, "a route with no scope does not look at tokens")
        XCTAssertTrue(pass(scope: .admin, tokens: []).reachedRoute)
    }
}
