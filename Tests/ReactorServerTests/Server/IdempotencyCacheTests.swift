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

    /// A first request refused before it was carried out (415 here) is not remembered; the fixed
    /// request under the same key then keeps its answer for its own whole window, not until the
    /// refused one's would have ended.
    func testAKeyForgottenEarlyKeepsItsNextAnswerForAWholeWindow() {
        let cache = IdempotencyCache(windowSeconds: 4, capacity: 10)
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "bad", now: 0) else { return XCTFail() }
        cache.finish("k", fingerprint: "bad", response: Problem.unsupportedMediaType("text/plain", expected: "application/json").response)
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "1", now: 2_000) else { return XCTFail() }
        cache.finish("k", fingerprint: "1", response: ok)
        guard case .replay = cache.admit("k", displayKey: "k", fingerprint: "1", now: 4_500) else { return XCTFail("applied twice") }
        guard case .proceed = cache.admit("k", displayKey: "k", fingerprint: "1", now: 6_000) else { return XCTFail("not expired") }
    }

    /// Keys forgotten early (answers not remembered) do not pile up past twice the capacity.
    func testKeysForgottenEarlyDoNotGrowTheCachePastItsCapacity() {
        let cache = IdempotencyCache(windowSeconds: 300, capacity: 10)
        for index in 0..<1_000 {
            _ = cache.admit("k\(index)", displayKey: "k", fingerprint: "f", now: UInt64(index))
            cache.forget("k\(index)")
        }
        XCTAssertEqual(cache.count, 0)
        XCTAssertLessThanOrEqual(cache.recordCount, 20)
        for index in 0..<15 {
            _ = cache.admit("live\(index)", displayKey: "k", fingerprint: "f", now: 2_000)
            cache.finish("live\(index)", fingerprint: "f", response: ok)
        }
        XCTAssertEqual(cache.count, 10)
        guard case .replay = cache.admit("live14", displayKey: "k", fingerprint: "f", now: 2_001) else { return XCTFail("the newest went") }
        guard case .proceed = cache.admit("live0", displayKey: "k", fingerprint: "f", now: 2_001) else { return XCTFail("the oldest stayed") }
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

    func testOneClientsKeysNeverPushOutAnothers() {
        let cache = IdempotencyCache(windowSeconds: 100, capacity: 3)
        let alice = IdempotencyCache.scopedKey("pay-42", client: "alice")
        _ = cache.admit(alice, displayKey: "pay-42", fingerprint: "1", now: 0)
        cache.finish(alice, fingerprint: "1", response: ok)
        for index in 0..<10 {
            let key = IdempotencyCache.scopedKey("k\(index)", client: "mallory")
            _ = cache.admit(key, displayKey: "k\(index)", fingerprint: "1", now: 1)
            cache.finish(key, fingerprint: "1", response: HTTPResponse(status: .forbidden))
        }
        guard case .replay = cache.admit(alice, displayKey: "pay-42", fingerprint: "1", now: 2) else {
            return XCTFail("another client's keys pushed alice's out: her retry would apply again")
        }
        XCTAssertEqual(cache.count, 4, "mallory keeps her own 3 at most")
    }

    func testKeysAreScopedPerClient() {
        XCTAssertNotEqual(IdempotencyCache.scopedKey("k", client: "alice"), IdempotencyCache.scopedKey("k", client: "bob"))
    }
}
