import CUV
import Logging

/// The process around a server: its loop on the calling thread, stopped cleanly by SIGINT or SIGTERM.
public final class Daemon {
    public let loop: EventLoop
    private let logger: Logger

    /// Creates the loop on the calling thread, which `runUntilSignalled()` must run on.
    public init(logger: Logger) throws {
        self.logger = logger
        loop = try EventLoop()
    }

    /// Runs the loop until SIGINT or SIGTERM.
    public func runUntilSignalled() {
        let watcher: SignalWatcher
        do {
            watcher = try SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { [loop, logger] signal in
                logger.notice("stopping", metadata: ["signal": "\(signal == SIGINT ? "SIGINT" : "SIGTERM")"])
                loop.stop()
            }
        } catch {
            logger.critical("cannot watch signals", metadata: ["error": "\(error)"])
            return
        }
        loop.run()
        _ = watcher
    }
}
