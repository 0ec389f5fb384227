import Foundation

/// The files of a data directory:
///
///     LOCK                                  held (flock) by the one process using the directory
///     journal/00000000000000000001.log      segments, named by the first version they hold
///     snapshots/00000000000000000000.snapshot   the state at a version, named by it
///
/// POSIX calls with their errors as `EventLogError`s naming the file, and the hook tests use to make
/// them fail (a full disk, an I/O error) on purpose.
public struct DataDirectory: Sendable {
    public let path: String
    /// Makes chosen operations fail with an errno, for tests: nil lets the call through.
    public var faults: (@Sendable (FileOperation, String) -> Int32?)?

    public enum FileOperation: Sendable, Equatable {
        case write, fsync, rename, truncate
    }

    public init(path: String, faults: (@Sendable (FileOperation, String) -> Int32?)? = nil) {
        self.path = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        self.faults = faults
    }

    var journalPath: String { path + "/journal" }
    var snapshotsPath: String { path + "/snapshots" }
    /// There while an import fills the directory: what it holds then is an unfinished import's.
    var importMarkerPath: String { path + "/IMPORTING" }
    /// The name of the history the directory holds (`HistoryName`).
    var historyPath: String { path + "/HISTORY" }

    /// The name of the history the directory holds, drawn and written now for a new history
    /// (`startingOver`), or for a directory written before names were kept. The old name is removed
    /// first: where the new one cannot be written (a full disk), the name drawn holds for this
    /// process only and the next start draws another (subscribers resuming then get snapshots,
    /// which is safe), rather than read back a name whose versions meant other states.
    func history(startingOver: Bool, onFailure: (EventLogError) -> Void = { _ in }) -> String {
        if !startingOver, let bytes = try? readFile(historyPath) {
            let name = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if HistoryName.isWellFormed(name) { return name }
        }
        let name = HistoryName.random()
        do throws(EventLogError) {
            if unlink(historyPath) != 0 && errno != ENOENT { throw Self.error("cannot remove", historyPath) }
            try writeAtomically(Array((name + "\n").utf8), to: historyPath)
        } catch {
            onFailure(error)
        }
        return name
    }

    func segmentPath(firstVersion: UInt64) -> String { journalPath + "/" + Self.fileName(firstVersion) + ".log" }
    func snapshotPath(version: UInt64) -> String { snapshotsPath + "/" + Self.fileName(version) + ".snapshot" }

    static func fileName(_ version: UInt64) -> String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// The versions in the names of `directory`'s files ending in `suffix`, sorted.
    func versions(in directory: String, suffix: String) throws(EventLogError) -> [UInt64] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw EventLogError(.io(code: EIO), "cannot list \(directory): \(error.localizedDescription)")
        }
        return names.compactMap { name in
            guard name.hasSuffix(suffix), name.count == 20 + suffix.count else { return nil }
            return UInt64(name.dropLast(suffix.count))
        }.sorted()
    }

    func segmentVersions() throws(EventLogError) -> [UInt64] { try versions(in: journalPath, suffix: ".log") }
    func snapshotVersions() throws(EventLogError) -> [UInt64] { try versions(in: snapshotsPath, suffix: ".snapshot") }

    /// Whether the directory holds a journal or snapshots already.
    var isInitialized: Bool {
        FileManager.default.fileExists(atPath: journalPath) || FileManager.default.fileExists(atPath: snapshotsPath)
    }

    /// Creates the directory (and its parents) and its subdirectories as needed.
    func create() throws(EventLogError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw EventLogError(.io(code: EIO), "cannot create the directory \(path): \(error.localizedDescription)")
        }
        for directory in [journalPath, snapshotsPath] {
            // Owner only: the state and the journal are the server's, as a database's files are.
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw Self.error("cannot create the directory", directory)
            }
        }
        try fsyncDirectory(path)
        // Its entry in its parent too, so that a power cut does not lose it; where the parent
        // cannot be opened (readable by others only), as before: the entry reaches the disk in time.
        try? fsyncDirectory(Self.parent(of: path))
    }

    /// Takes the directory's lock for this process; fails if another process holds it. `readOnly`
    /// (check, export) takes it shared, and needs no write access to the directory: a read-only
    /// backup can be checked, while a server's lock still keeps it out.
    func lock(readOnly: Bool = false) throws(EventLogError) -> Int32 {
        let lockPath = path + "/LOCK"
        var fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 && readOnly && (errno == EACCES || errno == EROFS) { fd = open(lockPath, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw Self.error("cannot open", lockPath) }
        guard flock(fd, (readOnly ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw EventLogError(.unavailable, "the data directory \(path) is in use by another process (\(lockPath) is locked)")
            }
            throw EventLogError(.io(code: code), "cannot lock \(lockPath): \(String(cString: strerror(code)))")
        }
        return fd
    }

    // MARK: POSIX with errors

    func readFile(_ file: String) throws(EventLogError) -> [UInt8] {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.error("cannot open", file) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var stats = stat()
        if fstat(fd, &stats) == 0 { bytes.reserveCapacity(Int(stats.st_size)) }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot read", file)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Opens a journal segment for writing at chosen offsets (`pwrite`), not appending.
    func openForWriting(_ file: String, create: Bool) throws(EventLogError) -> Int32 {
        let fd = open(file, O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0o600)
        guard fd >= 0 else { throw Self.error("cannot open", file) }
        return fd
    }

    func fileSize(_ fd: Int32, file: String) throws(EventLogError) -> Int {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw Self.error("cannot stat", file) }
        return Int(status.st_size)
    }

    /// Writes `bytes` at `offset`, whatever the file's size.
    func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>, at offset: Int, file: String) throws(EventLogError) {
        if let code = faults?(.write, file) { throw Self.error("cannot write", file, code: code) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                pwrite(fd, raw.baseAddress! + written, raw.count - written, off_t(offset + written))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot write", file)
            }
            written += count
        }
    }

    /// Writes zeros from `start` to `end`: room the journal's records are later written over.
    func writeZeros(_ fd: Int32, from start: Int, to end: Int, file: String) throws(EventLogError) {
        let zeros = [UInt8](repeating: 0, count: min(end - start, 1 << 16))
        var offset = start
        while offset < end {
            let count = min(zeros.count, end - offset)
            try writeAll(fd, zeros[..<count], at: offset, file: file)
            offset += count
        }
    }

    /// Makes a file's data durable, and its size if that changed, but not its times (`fdatasync`).
    func syncData(_ fd: Int32, file: String) throws(EventLogError) {
        if let code = faults?(.fsync, file) { throw Self.error("cannot fsync", file, code: code) }
        guard fdatasync(fd) == 0 else { throw Self.error("cannot fsync", file) }
    }

    func writeAll(_ fd: Int32, _ bytes: [UInt8], file: String) throws(EventLogError) {
        if let code = faults?(.write, file) { throw Self.error("cannot write", file, code: code) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                Foundation.write(fd, raw.baseAddress! + written, raw.count - written)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot write", file)
            }
            written += count
        }
    }

    func sync(_ fd: Int32, file: String) throws(EventLogError) {
        if let code = faults?(.fsync, file) { throw Self.error("cannot fsync", file, code: code) }
        guard fsync(fd) == 0 else { throw Self.error("cannot fsync", file) }
    }

    func truncate(_ fd: Int32, to size: Int, file: String) throws(EventLogError) {
        if let code = faults?(.truncate, file) { throw Self.error("cannot truncate", file, code: code) }
        guard ftruncate(fd, off_t(size)) == 0 else { throw Self.error("cannot truncate", file) }
    }

    /// Makes a new or removed name in `directory` durable.
    func fsyncDirectory(_ directory: String) throws(EventLogError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.error("cannot open the directory", directory) }
        defer { close(fd) }
        try sync(fd, file: directory)
    }

    /// Writes `bytes` to `file` so that a crash leaves either the old file or the whole new one:
    /// a temporary file, fsync, rename over `file`, fsync of the directory.
    func writeAtomically(_ bytes: [UInt8], to file: String) throws(EventLogError) {
        let temporary = file + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.error("cannot create", temporary) }
        do {
            try writeAll(fd, bytes, file: temporary)
            try sync(fd, file: temporary)
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        if let code = faults?(.rename, file) {
            unlink(temporary)
            throw Self.error("cannot rename \(temporary) to", file, code: code)
        }
        guard rename(temporary, file) == 0 else {
            let failure = Self.error("cannot rename \(temporary) to", file)
            unlink(temporary)
            throw failure
        }
        try fsyncDirectory(Self.parent(of: file))
    }

    /// The directory that holds `path`: "." for a name without a slash, "/" for one at the root.
    /// (Foundation's `deletingLastPathComponent` traps on a name of one character.)
    static func parent(of path: String) -> String {
        var components = Substring(path)
        while components.count > 1, components.hasSuffix("/") { components.removeLast() }
        guard let slash = components.lastIndex(of: "/") else { return "." }
        let parent = components[..<slash]
        return parent.isEmpty ? "/" : String(parent)
    }

    static func error(_ what: String, _ file: String, code: Int32 = errno) -> EventLogError {
        EventLogError(.io(code: code), "\(what) \(file): \(String(cString: strerror(code)))")
    }
}
