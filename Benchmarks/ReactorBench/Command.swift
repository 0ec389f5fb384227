import ArgumentParser
import Foundation

struct ReactorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reactor-bench",
        abstract: "Fan-out benchmark: N WebSocket subscribers, E events over HTTP, time to the last subscriber.",
        discussion: """
            Opens N subscribers to ws://HOST:PORT/subscribe (at most --connect-window handshakes at a \
            time), waits for every snapshot, then fires E increment events with POST /events on one \
            keep-alive connection, one request at a time, with at most --window events not yet \
            delivered to every subscriber. Prints the fan-out latency per event (POST sent to the \
            last subscriber having its version), pushes per second, the server's CPU per push and \
            RSS per subscriber (with --server-pid), its own CPU, and the order violations seen.
            """
    )

    @Option(help: "Server address; only 127.0.0.1 (or localhost) is allowed.")
    var host = "127.0.0.1"

    @Option(help: "Server port.")
    var port: Int = 7070

    @Option(help: "WebSocket subscribers to open.")
    var subscribers: Int = 1000

    @Option(help: "Events to fire.")
    var events: Int = 200

    @Option(name: .customLong("server-pid"), help: "The server's pid: CPU (/proc/PID/stat) and RSS (/proc/PID/status) are read from it.")
    var serverPID: Int32?

    @Option(help: "Seconds the whole run may take before it gives up (exit status 2).")
    var timeout: Double = 120

    @Option(name: .customLong("connect-window"), help: "Subscriber handshakes in progress at once (keeps the listen backlog from overflowing).")
    var connectWindow: Int = 200

    @Option(help: "Events fired but not yet delivered to every subscriber, at most (1: each event alone).")
    var window: Int = 1

    @Option(help: "Seconds to wait, all subscribers idle, before reading the server's RSS and firing.")
    var settle: Double = 1

    @Option(help: "The event's JSON pointer path.")
    var path = "/counter"

    @Flag(help: "Fire a realistic event instead of an increment: a `set` of a ~300-byte object into one of 16 entries under --path (which should hold them already).")
    var realistic = false

    @Flag(help: "Offer permessage-deflate (RFC 7692) and inflate compressed messages; a server that does not agree fails the run.")
    var deflate = false

    func validate() throws {
        guard host == "127.0.0.1" || host == "localhost" else { throw ValidationError("only 127.0.0.1 is allowed as --host") }
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1 to 65535") }
        guard subscribers > 0 else { throw ValidationError("--subscribers must be positive") }
        guard events > 0 else { throw ValidationError("--events must be positive") }
        guard timeout > 0, settle >= 0 else { throw ValidationError("--timeout must be positive, --settle not negative") }
        guard connectWindow > 0, window > 0 else { throw ValidationError("--connect-window and --window must be positive") }
    }

    func run() throws {
        // Its own file-descriptor needs: one per subscriber, the HTTP connection, a few more.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < rlim_t(subscribers + 64) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(subscribers + 64))
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            if limit.rlim_cur < rlim_t(subscribers + 64) {
                throw ValidationError("the open-file limit (\(limit.rlim_cur)) is too low for \(subscribers) subscribers: raise it with ulimit -n")
            }
        }
        let options = BenchOptions(
            port: port, subscribers: subscribers, events: events, serverPID: serverPID, timeout: timeout,
            connectWindow: connectWindow, window: window, settle: settle, path: path, realistic: realistic, deflate: deflate
        )
        let bench = try Bench(options: options)
        let status = bench.run()
        if status != 0 { throw ExitCode(status) }
    }
}
