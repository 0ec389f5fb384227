import ArgumentParser
import Foundation
import ReactorServer

/// `reactord check`: verifies a data directory without starting the server.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verifies a data directory (checksums, contiguous versions) without changing it.",
        discussion: "Exits 0 when the directory is sound (a torn final record, which start-up cuts off, is reported), 1 when it is damaged or holds a state beyond reactord's limits (then `reactord repair` brings it back)."
    )

    @Option(help: "The data directory.")
    var dataDir: String

    func run() throws {
        let report: JournalRecovery.Report
        do {
            report = try DataDirectoryOperations.check(DataDirectory(path: dataDir), as: JSONDocument.self)
        } catch {
            let verdict = switch error.kind {
            case .damaged: "is damaged"
            case .beyondLimits: "holds a state beyond reactord's limits"
            default: "cannot be checked"
            }
            FileHandle.standardError.write(Data("reactord check: \(dataDir) \(verdict): \(error)\n".utf8))
            throw ExitCode(1)
        }
        for warning in report.warnings {
            print("warning: \(warning) (the final record is cut short or damaged; reactord cuts it off at start-up: a write a crash tore, never acknowledged, or damage)")
        }
        if let unfinished = report.unfinishedRequest {
            print("warning: \(unfinished) (the first events of a request whose last event never reached the disk; reactord cuts them off at start-up: the request was not acknowledged, and is kept all or none)")
        }
        print("ok: snapshot at version \(report.snapshotVersion), \(report.records) events after it in \(report.segments.count) segment(s), last version \(report.lastVersion)")
    }
}

/// `reactord compact`: a snapshot of the newest state, and the journal it makes redundant removed.
struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Writes a snapshot of the newest state and removes the journal before it. Not while reactord runs on the directory.")

    @Option(help: "The data directory.")
    var dataDir: String

    func run() throws {
        do {
            let version = try DataDirectoryOperations.compact(DataDirectory(path: dataDir), as: JSONDocument.self)
            print("compacted: snapshot at version \(version)")
        } catch {
            throw CommandFailure("cannot compact \(dataDir): \(error)")
        }
    }
}

/// `reactord repair`: a directory whose state nests deeper than reactord keeps, brought within it.
struct Repair: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Brings a data directory whose state nests deeper than \(JSON.maximumDepth) levels back within that limit. Not while reactord runs on the directory.",
        discussion: "Such a directory was written before the limit was enforced, and reactord refuses to start on it. Every event is replayed as it was first applied; then each array or object that would nest deeper is replaced by a string holding its JSON text (nothing is lost) and the result is written as a snapshot of the last version. A directory within the limit is left as it is."
    )

    @Option(help: "The data directory.")
    var dataDir: String

    func run() throws {
        let report: DocumentDepthRepair.Report
        do {
            report = try DocumentDepthRepair.repair(DataDirectory(path: dataDir))
        } catch {
            throw CommandFailure("cannot repair \(dataDir): \(error)")
        }
        guard !report.folded.isEmpty else {
            print("nothing to repair: the state at version \(report.version) nests no deeper than \(JSON.maximumDepth) levels")
            return
        }
        print("repaired: snapshot at version \(report.version); \(report.folded.count) value(s) nested deeper than \(JSON.maximumDepth) levels are now strings holding their JSON text:")
        for pointer in report.folded.prefix(20) {
            let text = pointer.string
            print("  " + (text.count > 200 ? String(text.prefix(200)) + "…" : text))
        }
        if report.folded.count > 20 { print("  … and \(report.folded.count - 20) more") }
    }
}

/// `reactord export`: the directory as JSON lines.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Writes a data directory as JSON lines: its snapshot, then every event after it.",
        discussion: "The first line is {\"version\":S,\"state\":...}; each further line {\"version\":N,\"event\":...}. Idempotency answers still within their window ride on the lines of the events that answered them (\"answers\":[...]), so that import keeps them."
    )

    @Option(help: "The data directory.")
    var dataDir: String

    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        // A file is written beside the output and renamed over it once whole: an export that fails
        // (the directory in use, damaged, mistyped) leaves the previous one as it was.
        let temporary = output.map { "\($0).partial-\(ProcessInfo.processInfo.processIdentifier)" }
        let handle: FileHandle
        if let temporary {
            guard FileManager.default.createFile(atPath: temporary, contents: nil), let file = FileHandle(forWritingAtPath: temporary) else {
                throw CommandFailure("cannot create \(temporary)")
            }
            handle = file
        } else {
            handle = .standardOutput
        }
        var finished = false
        defer { if let temporary, !finished { unlink(temporary) } }
        var buffer: [UInt8] = []
        var writeError: (any Error)?
        do {
            let report = try DataDirectoryOperations.export(DataDirectory(path: dataDir)) { line in
                buffer.append(contentsOf: line)
                if buffer.count >= 1 << 16 && writeError == nil {
                    do { try handle.write(contentsOf: buffer) } catch { writeError = error }
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            if writeError == nil {
                do { try handle.write(contentsOf: buffer) } catch { writeError = error }
            }
            if let writeError { throw CommandFailure("cannot write the export to \(output ?? "standard output"): \(writeError.localizedDescription)") }
            if let output, let temporary {
                do { try handle.synchronize() } catch { throw CommandFailure("cannot sync \(temporary): \(error.localizedDescription)") }
                guard rename(temporary, output) == 0 else {
                    throw CommandFailure("cannot rename \(temporary) to \(output): \(String(cString: strerror(errno)))")
                }
                finished = true
                FileHandle.standardError.write(Data("exported versions \(report.snapshotVersion) to \(report.lastVersion)\n".utf8))
            }
        } catch let error as EventLogError {
            throw CommandFailure("cannot export \(dataDir): \(error)")
        }
    }
}

/// `reactord import`: an export into an empty data directory.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fills an empty data directory from an export, with the same state and versions.")

    @Option(help: "The data directory (empty or not yet there).")
    var dataDir: String

    @Argument(help: "The export (JSON lines); - reads standard input.")
    var file: String

    func run() throws {
        let data: Data?
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            // A handle reads pipes and process substitutions (/dev/fd/N) too, which have no size.
            data = FileHandle(forReadingAtPath: file)?.readDataToEndOfFile()
        }
        guard let data else { throw CommandFailure("cannot read \(file)") }
        let bytes = [UInt8](data)
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { Array($0) }
        do {
            let version = try DataDirectoryOperations.importLines(lines, into: DataDirectory(path: dataDir), as: JSONDocument.self)
            print("imported: last version \(version)")
        } catch {
            throw CommandFailure("cannot import \(file): \(error)")
        }
    }
}

/// A command that failed for a reason other than its arguments: said plainly, without the usage text
/// that ArgumentParser adds to a ValidationError; the exit status is 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
