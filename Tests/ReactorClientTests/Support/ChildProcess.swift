import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with no signal blocked, its standard error into a pipe.
///
/// Not Foundation's `Process`: a child inherits the blocked signals of the thread that starts it, and
/// Dispatch's worker threads (where async tests run) block them all, so a server started from one with
/// `Process` never sees the SIGTERM that should stop it.
final class ChildProcess: Sendable {
    let pid: pid_t
    /// The exit status, once reaped.
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable`; its standard error goes to `standardError` (a pipe's write end, which the
    /// caller closes afterwards), its standard input and output to /dev/null.
    init(_ executable: String, arguments: [String], standardError: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, standardError, 2)
        #if canImport(Glibc)
        // Nothing else of ours (the tests' client sockets above all) is kept open by the child. glibc
        // 2.34 has this, but its header hides it from Swift without _GNU_SOURCE.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        #endif

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        posix_spawnattr_setsigdefault(&attributes, &stopSignals)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for string in argv + environment { free(string) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard result == 0 else {
            throw TestFailure(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    #if canImport(Glibc)
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()
    #endif

    var isRunning: Bool { reap(blocking: false) == nil }

    /// SIGTERM, then SIGKILL if it has not exited within `grace` seconds. Returns the exit status.
    @discardableResult
    func stop(grace: TimeInterval = 5) -> Int32 {
        if let status = reap(blocking: false) { return status }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while Date() < deadline {
            if let status = reap(blocking: false) { return status }
            Thread.sleep(forTimeInterval: 0.005)
        }
        kill(pid, SIGKILL)
        return reap(blocking: true) ?? -1
    }

    /// The exit status if the child has exited, reaping it once.
    private func reap(blocking: Bool) -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, blocking ? 0 : WNOHANG) == pid else { return nil }
            status = raw
            return raw
        }
    }
}
