import XCTest

@testable import ReactorServer

/// A connection's output as the loop batches it (`PendingWrites`, what `WriteBatch` keeps), with
/// no socket: the order bytes leave in, the entries they make, when the batch is full, and that
/// each writer is held exactly until its bytes are handed on.
final class PendingWritesTests: XCTestCase {
    private final class Writer {
        let name: String
        init(_ name: String) { self.name = name }
    }

    /// Appends `text`'s bytes for `writer`.
    private func write(_ text: String, for writer: Writer, to pending: inout PendingWrites<Writer>) {
        let bytes = Array(text.utf8)
        let written = pending.append(atMost: bytes.count, for: writer) { destination in
            bytes.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return bytes.count
        }
        XCTAssertEqual(written, bytes.count)
    }

    /// What a drain hands on: each entry's writer and bytes, in order.
    private func drain(_ pending: inout PendingWrites<Writer>) -> [String] {
        var written: [String] = []
        pending.drain { writer, bytes in written.append("\(writer.name):\(String(decoding: bytes, as: UTF8.self))") }
        return written
    }

    func testBytesLeaveInTheOrderWrittenAndAWritersRunJoinsOneEntry() {
        var pending = PendingWrites<Writer>(capacity: 64, maxEntries: 8)
        defer { pending.deallocate() }
        let a = Writer("a"), b = Writer("b")
        write("1", for: a, to: &pending)
        write("2", for: a, to: &pending)  // pipelined answers: one entry, one write
        write("3", for: b, to: &pending)
        write("4", for: a, to: &pending)  // after b's: an entry of its own, so b's bytes stay between
        XCTAssertEqual(pending.count, 4)
        XCTAssertEqual(drain(&pending), ["a:12", "b:3", "a:4"])
        XCTAssertTrue(pending.isEmpty)
        XCTAssertEqual(pending.count, 0)
        write("5", for: b, to: &pending)
        XCTAssertEqual(drain(&pending), ["b:5"], "the buffer is reused from its start")
    }

    func testAFillMayWriteFewerBytesThanItsMaximumOrNone() {
        var pending = PendingWrites<Writer>(capacity: 16, maxEntries: 4)
        defer { pending.deallocate() }
        let a = Writer("a"), b = Writer("b")
        let wrote = pending.append(atMost: 10, for: a) { destination in
            destination.storeBytes(of: UInt8(ascii: "x"), as: UInt8.self)
            return 1
        }
        XCTAssertEqual(wrote, 1)
        XCTAssertEqual(pending.append(atMost: 10, for: b) { _ in 0 }, 0)
        XCTAssertEqual(pending.count, 1)
        XCTAssertTrue(pending.hasRoom(for: 15), "only the written byte is taken")
        XCTAssertEqual(drain(&pending), ["a:x"], "no entry for a writer that wrote nothing")
    }

    func testTheBatchIsFullWhenTheBytesOrTheEntriesRunOut() {
        var pending = PendingWrites<Writer>(capacity: 8, maxEntries: 2)
        defer { pending.deallocate() }
        let writers = [Writer("a"), Writer("b")]
        XCTAssertTrue(pending.canEverHold(8))
        XCTAssertFalse(pending.canEverHold(9), "larger than the whole buffer: written past it")
        write("abcde", for: writers[0], to: &pending)
        XCTAssertTrue(pending.hasRoom(for: 3))
        XCTAssertFalse(pending.hasRoom(for: 4))
        write("f", for: writers[1], to: &pending)
        XCTAssertFalse(pending.hasRoom(for: 1), "every entry is taken")
        XCTAssertEqual(drain(&pending), ["a:abcde", "b:f"])
        XCTAssertTrue(pending.hasRoom(for: 8))
    }

    func testAWriterIsHeldUntilItsBytesAreHandedOnOrDiscarded() {
        var pending = PendingWrites<Writer>(capacity: 32, maxEntries: 4)
        defer { pending.deallocate() }
        weak var drained: Writer?
        weak var discarded: Writer?
        do {
            let writer = Writer("a")
            drained = writer
            write("x", for: writer, to: &pending)
        }
        XCTAssertNotNil(drained, "held by its entry")
        var seenAlive = false
        pending.drain { writer, _ in seenAlive = writer === drained }
        XCTAssertTrue(seenAlive, "alive while its bytes are handed on")
        XCTAssertNil(drained, "let go once they were")
        do {
            let writer = Writer("b")
            discarded = writer
            write("y", for: writer, to: &pending)
        }
        XCTAssertNotNil(discarded)
        pending.discard()
        XCTAssertNil(discarded, "a discarded batch holds nothing")
        XCTAssertTrue(pending.isEmpty)
    }
}
