import CUV
import Foundation
import Logging

/// The process around a server: its loop on the calling thread, stopped cleanly by SIGINT or
/// SIGTERM, and told of SIGHUP (reload what can be reloaded).
public final class Daemon {
    public let loop: EventLoop
    private let logger: Logger

    /// Creates the loop on the calling thread, which `run` must run on.
    public init(logger: Logger) throws {
        self.logger = logger
        loop = try EventLoop()
    }

    /// Runs the loop until SIGINT or SIGTERM. The first signal calls `stop`, which calls its
    /// completion once everything in flight is done; a second signal exits at once.
    public func run(reload: (() -> Void)? = nil, stop: @escaping (_ completion: @escaping () -> Void) -> Void) throws {
        // A process inherits its parent thread's blocked signals; started with SIGTERM blocked (from a
        // Dispatch worker, say), reactord would never hear it.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        var stopping = false
        let watcher = try SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { [loop, logger] signal in
            let name = signal == SIGINT ? "SIGINT" : "SIGTERM"
            guard !stopping else {
                logger.warning("second signal: exiting now", metadata: ["signal": "\(name)"])
                exit(1)
            }
            stopping = true
            logger.notice("stopping: finishing in-flight requests", metadata: ["signal": "\(name)"])
            stop { loop.stop() }
        }
        // Without a reload, SIGHUP keeps its default action (the process ends).
        let reloader = try reload.map { reload in
            try SignalWatcher(loop: loop, signals: [SIGHUP]) { [logger] _ in
                logger.notice("SIGHUP: reloading")
                reload()
            }
        }
        loop.run()
        withExtendedLifetime((watcher, reloader)) {}
    }
}
