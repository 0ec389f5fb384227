import Foundation
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import ReactorClient

/// A reactord process for one test, on 127.0.0.1: started with `--port 0` (or a given port, to restart
/// one in place), its address read from its "listening" log line, and stopped with SIGTERM.
final class Reactord: Sendable {
    let port: Int
    private let process: ChildProcess
    private let log: ProcessLog

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The binary: `$REACTORD_BIN`, else the one built beside the tests, else the one in this
    /// checkout's `.build-client` scratch path.
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["REACTORD_BIN"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let candidates = [
            // Linux: the test runner is an executable in the build's products directory.
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            // Apple platforms: the .xctest bundle is there.
            Bundle(for: Reactord.self).bundleURL.deletingLastPathComponent(),
        ].map { $0.appendingPathComponent("reactord") }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let scratch = repository.appendingPathComponent(".build-client/debug/reactord")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? scratch
    }()

    /// Starts a server and waits (up to 5 s) until it listens. Stop it with `stop()`, e.g. from a teardown block.
    static func start(port: Int = 0, arguments: [String] = []) throws -> Reactord {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw XCTSkip("no reactord at \(binary.path): build it (swift build --product reactord) or set REACTORD_BIN")
        }
        let errors = Pipe()
        let log = ProcessLog()
        // Read the log for as long as the process writes it, so that it never blocks on a full pipe.
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            log.append(data)
        }
        let process = try ChildProcess(binary.path, arguments: ["--host", "127.0.0.1", "--port", String(port), "--log-level", "notice"] + arguments,
                                       standardError: errors.fileHandleForWriting.fileDescriptor)
        try errors.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let text = log.text
            if let range = text.range(of: #"address=127\.0\.0\.1:(\d+)"#, options: .regularExpression),
               let listening = Int(text[range].split(separator: ":").last ?? "") {
                return Reactord(port: listening, process: process, log: log)
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        process.stop()
        throw TestFailure(description: "reactord did not start listening: \(log.text)")
    }

    private init(port: Int, process: ChildProcess, log: ProcessLog) {
        self.port = port
        self.process = process
        self.log = log
    }

    /// SIGTERM, which reactord answers by closing every subscription and exiting; SIGKILL after 5 s.
    /// Returns the wait status: 0 for a clean exit.
    @discardableResult
    func stop() -> Int32 {
        process.stop()
    }

    var logText: String { log.text }

    /// Fires `event` with `POST /events`, as another client would; returns the version it was applied at.
    @discardableResult
    func post(_ event: JSON, token: String? = nil) async throws -> UInt64 {
        var request = URLRequest(url: url.appendingPathComponent("events"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(event.jsonBytes)
        let (body, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200, let version = try JSON(parsing: [UInt8](body))["version"]?.int64Value else {
            throw TestFailure(description: "POST /events answered \(status): \(String(decoding: body, as: UTF8.self))")
        }
        return UInt64(version)
    }
}
