@testable import ReactorServer
import XCTest

final class IdempotencyCacheTests: XCTestCase {
    private let ok = HTTPResponse.json(Array(#"{"version":1}"#.utf8))

    func testARetryReplaysTheFirstAnswer() {
        let cache = IdempotencyCache(windowSeconds: 10, capacity: 10)
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "1", now: 0) else { return XCTFail() }
        cache.finish("k", fingerprint: "1", response: ok)
        guard case .replay(let response) = cache.admit("k", displayKey: "k", fingerprint: "1", now: 5_000) else { return XCTFail() }
        XCTAssertEqual(response.body, ok.body)
    }

    func testTheSameKeyForAnotherRequestIsRefused() {
        let cache = IdempotencyCache(windowSeconds: 10, capacity: 10)
        _ = cache.admit("k", displayKey: "k", fingerprint: "1", now: 0)
        guard case .reject(let problem) = cache.admit("k", displayKey: "k", fingerprint: "2", now: 1) else { return XCTFail() }
        XCTAssertEqual(problem.type, "/problems/idempotency-key-reused")
        cache.finish("k", fingerprint: "1", response: ok)
        guard case .reject(let later) = cache.admit("k", displayKey: "k", fingerprint: "2", now: 2) else { return XCTFail() }
        XCTAssertEqual(later.status.code, 422)
    }

    func testARetryWhileTheFirstIsInFlightIsAConflict() {
        let cache = IdempotencyCache(windowSeconds: 10, capacity: 10)
        _ = cache.admit("k", displayKey: "k", fingerprint: "1", now: 0)
        guard case .reject(let problem) = cache.admit("k", displayKey: "k", fingerprint: "1", now: 1) else { return XCTFail() }
        XCTAssertEqual(problem.status.code, 409)
    }

    func testAnAnswerTakenBackAfterARestartIsReplayedForTheRestOfItsWindow() {
        let cache = IdempotencyCache(windowSeconds: 10, capacity: 10)
        cache.restore("k", fingerprint: "f", response: ok, expiresIn: 3_000, now: 100)
        guard case .replay(let response) = cache.admit("k", displayKey: "k", fingerprint: "f", now: 3_099) else { return XCTFail() }
        XCTAssertEqual(response.body, ok.body)
        guard case .reject(let problem) = cache.admit("k", displayKey: "k", fingerprint: "g", now: 3_099) else { return XCTFail() }
        XCTAssertEqual(problem.status.code, 422)
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "f", now: 3_100) else { return XCTFail("not expired") }
    }

    func testTheFingerprintIsTheSameInEveryProcessAndTellsRequestsApart() {
        func request(_ target: String, _ body: String) -> HTTPRequest {
            HTTPRequest(method: .post, target: target, body: Array(body.utf8))
        }
        let first = IdempotencyCache.fingerprint(of: request("/events", #"{"type":"increment","path":"/n"}"#))
        XCTAssertEqual(first, IdempotencyCache.fingerprint(of: request("/events", #"{"type":"increment","path":"/n"}"#)))
        XCTAssertNotEqual(first, IdempotencyCache.fingerprint(of: request("/events?mode=prune", #"{"type":"increment","path":"/n"}"#)))
        XCTAssertNotEqual(first, IdempotencyCache.fingerprint(of: request("/events", #"{"type":"increment","path":"/m"}"#)))
        // SHA-1 of "POST /events\n" and the body: a Hasher's value would change with each process.
        XCTAssertEqual(first.count, 40)
    }

    func testKeysExpireAfterTheWindowAndServerErrorsAreForgotten() {
        let cache = IdempotencyCache(windowSeconds: 1, capacity: 10)
        _ = cache.admit("k", displayKey: "k", fingerprint: "1", now: 0)
        cache.finish("k", fingerprint: "1", response: ok)
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "1", now: 1_000) else { return XCTFail("not expired") }
        cache.finish("k", fingerprint: "1", response: HTTPResponse(status: .serviceUnavailable))
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "1", now: 1_001) else { return XCTFail("a 503 was replayed") }
    }

    func testTheOldestKeysGoBeyondTheCapacity() {
        let cache = IdempotencyCache(windowSeconds: 100, capacity: 2)
        for key in ["a", "b", "c"] {
            _ = cache.admit(key, displayKey: key, fingerprint: "1", now: 0)
            cache.finish(key, fingerprint: "1", response: ok)
        }
        guard case .proceed = cache.admit("a", displayKey: "a", fingerprint: "1", now: 1) else { return XCTFail("a was kept") }
        guard case .replay = cache.admit("c", displayKey: "c", fingerprint: "1", now: 1) else { return XCTFail("c was dropped") }
    }

    func testKeysAreScopedPerClient() {
        XCTAssertNotEqual(IdempotencyCache.scopedKey("k", client: "alice"), IdempotencyCache.scopedKey("k", client: "bob"))
    }
}
