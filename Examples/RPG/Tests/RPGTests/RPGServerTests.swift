import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import RPG
import Reactor
import ReactorServer
import XCTest

/// The typed RPG state served over real HTTP on 127.0.0.1, read back with URLSession.
final class RPGServerTests: XCTestCase {
    private var loop: EventLoop!
    private var holder: ServerPort!
    private var server: StateServer<RPGState> { holder.server! }
    private var base: URL!

    override func setUpWithError() throws {
        loop = try EventLoop.startThread()
        let started = DispatchSemaphore(value: 0)
        let port = ServerPort()
        loop.enqueue { [loop] in
            var configuration = ServerConfiguration()
            configuration.port = 0
            var logger = Logger(label: "rpg-test")
            logger.logLevel = .warning
            let server = StateServer(loop: loop!, state: RPGState(players: [Player(name: "Ayla"), Player(name: "Bram")]),
                                     configuration: configuration, logger: logger)
            try! server.start()
            port.set(server)
            started.signal()
        }
        started.wait()
        holder = port
        base = URL(string: "http://127.0.0.1:\(port.port)")!
    }

    override func tearDown() {
        let stopped = DispatchSemaphore(value: 0)
        loop.enqueue { [holder, loop] in holder!.server!.shutdown { loop!.stop(); stopped.signal() } }
        stopped.wait()
    }

    private func send(_ method: String, _ path: String, body: String? = nil) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: base.absoluteString + path)!)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }

    func testLevelUpOverHTTP() async throws {
        let (status, body) = try await send("POST", "/events", body: #"{"type":"levelUp","playerID":1}"#)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(body, #"{"version":1}"#)
        let (_, state) = try await send("GET", "/state")
        XCTAssertEqual(try JSON(parsing: state), ["players": [["name": "Ayla", "level": 1], ["name": "Bram", "level": 2]]])
    }

    func testARejectedTypedEventIsA422ProblemAndChangesNothing() async throws {
        let (status, body) = try await send("POST", "/events", body: #"{"type":"levelUp","playerID":9}"#)
        XCTAssertEqual(status, 422)
        let problem = try JSON(parsing: body)
        XCTAssertEqual(problem["type"], "/problems/event-rejected")
        XCTAssertEqual(problem["detail"], "there is no player 9; player ids are 0 to 1")
        XCTAssertEqual(server.core.version, 0)
    }

    func testABatchOfTypedEventsIsAllOrNothing() async throws {
        let (status, body) = try await send("POST", "/events", body: #"[{"type":"addPlayer","name":"Cai"},{"type":"levelUp","playerID":5}]"#)
        XCTAssertEqual(status, 422)
        XCTAssertEqual(try JSON(parsing: body)["index"], 1)
        let (okStatus, okBody) = try await send("POST", "/events", body: #"[{"type":"addPlayer","name":"Cai"},{"type":"levelUp","playerID":2}]"#)
        XCTAssertEqual(okStatus, 200)
        XCTAssertEqual(try JSON(parsing: okBody), ["version": 2, "applied": 2])
        let (_, player) = try await send("GET", "/state?path=/players/2")
        XCTAssertEqual(try JSON(parsing: player), ["name": "Cai", "level": 2])
    }
}

/// Hands the started server from the loop thread to the test.
/// @unchecked Sendable: written once before a semaphore signal, read after the wait.
private final class ServerPort: @unchecked Sendable {
    var server: StateServer<RPGState>?
    var port = 0
    func set(_ server: StateServer<RPGState>) {
        self.server = server
        port = server.http.port
    }
}
