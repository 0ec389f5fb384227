/// The bytes writers have written during a turn and not yet handed on, in one fixed buffer, in the
/// order written: `WriteBatch`'s bookkeeping, sans-I/O. A writer's consecutive writes join one
/// entry (one write for a pipelining client's answers); each entry holds its writer until it is
/// drained or discarded, so the writer is alive when its bytes go.
///
/// Owns unmanaged memory: `deallocate()` once, when the owner goes.
struct PendingWrites<Writer: AnyObject> {
    private struct Entry {
        let writer: Writer
        let start: Int
        var count: Int
    }

    private let storage: UnsafeMutableRawBufferPointer
    private let entries: UnsafeMutablePointer<Entry>
    private let maxEntries: Int
    private var used = 0
    private var entryCount = 0

    init(capacity: Int, maxEntries: Int) {
        storage = .allocate(byteCount: capacity, alignment: 16)
        entries = .allocate(capacity: maxEntries)
        self.maxEntries = maxEntries
    }

    var isEmpty: Bool { entryCount == 0 }
    /// Bytes held.
    var count: Int { used }

    /// Whether `maximum` bytes fit in the buffer at all, empty.
    @inline(__always)
    func canEverHold(_ maximum: Int) -> Bool { maximum <= storage.count }

    /// Whether `maximum` more bytes fit now, in a new entry if need be.
    @inline(__always)
    func hasRoom(for maximum: Int) -> Bool { maximum <= storage.count - used && entryCount < maxEntries }

    /// Holds for `writer` the bytes `fill` writes straight into the buffer, at most `maximum` of
    /// them (there must be room: `hasRoom(for:)`); `fill` returns how many it wrote, and so does this.
    @inline(__always)
    mutating func append(atMost maximum: Int, for writer: Writer, _ fill: (UnsafeMutableRawPointer) -> Int) -> Int {
        precondition(hasRoom(for: maximum), "no room: flush first")
        let count = fill(storage.baseAddress! + used)
        if entryCount > 0, entries[entryCount - 1].writer === writer {
            entries[entryCount - 1].count += count
        } else if count > 0 {
            (entries + entryCount).initialize(to: Entry(writer: writer, start: used, count: count))
            entryCount += 1
        }
        used += count
        return count
    }

    /// Hands each entry's bytes to `body` with its writer, in the order written, letting go of each
    /// writer once its call returns; empty after. `body` must not append meanwhile.
    mutating func drain(_ body: (Writer, UnsafeRawBufferPointer) -> Void) {
        let base = UnsafeRawPointer(storage.baseAddress!)
        for index in 0 ..< entryCount {
            let entry = (entries + index).move()
            body(entry.writer, UnsafeRawBufferPointer(start: base + entry.start, count: entry.count))
        }
        entryCount = 0
        used = 0
    }

    /// Lets go of everything held, unwritten.
    mutating func discard() {
        entries.deinitialize(count: entryCount)
        entryCount = 0
        used = 0
    }

    /// Discards what is held and frees the memory.
    mutating func deallocate() {
        discard()
        storage.deallocate()
        entries.deallocate()
    }
}
