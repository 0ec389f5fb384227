import XCTest

@testable import ReactorClient

final class TransportSelectionTests: XCTestCase {
    func testServerSentEventsWhenAskedFor() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let remote = try remoteCore(Counters.self, at: server) { $0.transport = .serverSentEvents }
        let version1 = try await remote.fireAndWait(event: Increment(path: "/counter"))
        XCTAssertEqual(version1, 1)
        XCTAssertEqual(remote.status, .open(.serverSentEvents))
    }

    /// Whether this Foundation can open a WebSocket is found out for real, with a remote core that
    /// insists on one; the automatic choice must then agree with it. (On Debian 12 it cannot:
    /// "WebSockets not supported by libcurl".)
    func testTheAutomaticChoiceFallsBackToServerSentEventsExactlyWhenWebSocketIsUnsupported() async throws {
        let server = try startReactord(arguments: ["--initial-state", try initialStateFile(["counter": 0])])
        let webSocketOnly = try remoteCore(Counters.self, at: server) { $0.transport = .webSocket }
        try await waitUntil("the WebSocket opened or was found unsupported") {
            webSocketOnly.status.isOpen || webSocketOnly.status == .unsupported(.webSocket)
        }
        let webSocketWorks = webSocketOnly.status == .open(.webSocket)
        if !webSocketWorks {
            do {
                _ = try await webSocketOnly.fireAndWait(event: Increment(path: "/counter"))
                XCTFail("fired over an unsupported transport")
            } catch let error as RemoteCoreError {
                XCTAssertEqual(error, .unsupported(.webSocket))
            }
        }

        let automatic = try remoteCore(Counters.self, at: server)
        let recorder = StateRecorder<Counters>()
        automatic.add(subscriber: recorder)
        let version = try await automatic.fireAndWait(event: Increment(path: "/counter"))
        await fulfillment(of: [recorder.expectation(version: version)], timeout: 5)
        XCTAssertEqual(automatic.status, .open(webSocketWorks ? .webSocket : .serverSentEvents))
        XCTAssertEqual(automatic.counts.connections, 1, "an unsupported WebSocket is not a failed connection")
        #if canImport(FoundationNetworking)
        print("swift-corelibs-foundation here \(webSocketWorks ? "opens" : "cannot open") WebSockets")
        #endif
    }
}
