import Foundation
import XCTest

@testable import ReactorClient

// What the remote core tests share: servers, remote cores and files that go away with the test.
extension XCTestCase {
    /// A server stopped when the test ends.
    func startReactord(port: Int = 0, arguments: [String] = []) throws -> Reactord {
        let server = try Reactord.start(port: port, arguments: arguments)
        addTeardownBlock { server.stop() }
        return server
    }

    /// A remote core closed when the test ends, with quick reconnections.
    func remoteCore<StateType: Decodable & Sendable>(
        _ type: StateType.Type, at server: Reactord, token: String? = nil, path: String = "",
        configure: (inout RemoteCoreOptions) -> Void = { _ in }
    ) throws -> RemoteCore<StateType> {
        var options = RemoteCoreOptions()
        options.backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(400))
        options.fireTimeout = .seconds(5)
        configure(&options)
        let remote = RemoteCore<StateType>(url: server.url, token: token, path: try JSONPointer(path), options: options)
        addTeardownBlock { remote.close() }
        return remote
    }

    /// A fresh directory, removed when the test ends.
    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reactor-client-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    /// A file holding `json`, for `--initial-state`.
    func initialStateFile(_ json: JSON) throws -> String {
        let file = try temporaryDirectory().appendingPathComponent("initial.json")
        try Data(json.jsonBytes).write(to: file)
        return file.path
    }

    /// Waits until `condition` holds, checking every 10 ms, for at most `timeout` seconds.
    func waitUntil(_ what: String, timeout: TimeInterval = 5, file: StaticString = #filePath, line: UInt = #line,
                   _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else {
                XCTFail("timed out waiting until \(what)", file: file, line: line)
                throw TestFailure(description: "timed out waiting until \(what)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
