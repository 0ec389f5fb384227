#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What parsers keep from one parse to the next, one per thread: the strings they made lately and
/// the stack they gather containers' members on. Per thread, so no lock; a parser reaches it through
/// a pointer that stays valid for as long as its thread runs.
struct JSONParserScratch {
    var strings = RecentStrings()
    var stack = JSONParseStack()

    /// This thread's scratch, made on first use and freed when the thread ends.
    static var current: UnsafeMutablePointer<JSONParserScratch> {
        if let existing = pthread_getspecific(key) {
            return existing.assumingMemoryBound(to: JSONParserScratch.self)
        }
        let made = UnsafeMutablePointer<JSONParserScratch>.allocate(capacity: 1)
        made.initialize(to: JSONParserScratch())
        pthread_setspecific(key, made)
        return made
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            // Optional in Glibc's signature, not in Darwin's.
            guard let pointer = pointer as UnsafeMutableRawPointer? else { return }
            let scratch = pointer.assumingMemoryBound(to: JSONParserScratch.self)
            scratch.pointee.strings.deallocate()
            scratch.pointee.stack.deallocate()
            scratch.deinitialize(count: 1)
            scratch.deallocate()
        }
        return key
    }()
}

/// The keys and values of the containers a parser has open, innermost last. A container pushes
/// its members as it reads them and, when it closes, moves them into arrays of their exact size:
/// no array grows while a container is read, and none is left larger than its contents. The stack
/// itself grows (doubling) and is kept for the thread's next parse, up to `keptKeys` and
/// `keptValues`: a larger document (a long array) gives the rest back when its parse ends.
///
/// A parse that fails leaves what it pushed; its entry point `unwind`s to where it started. A parse
/// nested in another on the same thread (from a member callback) starts above the outer one's
/// entries and leaves them as they were.
struct JSONParseStack {
    static let keptKeys = 256
    static let keptValues = 1024
    private(set) var keys: UnsafeMutablePointer<String>
    private(set) var values: UnsafeMutablePointer<JSON>
    private(set) var keyCapacity = 16
    private(set) var valueCapacity = 32
    private(set) var keyCount = 0
    private(set) var valueCount = 0

    init() {
        keys = .allocate(capacity: keyCapacity)
        values = .allocate(capacity: valueCapacity)
    }

    @inline(__always)
    mutating func push(key: consuming String) {
        if keyCount == keyCapacity { keys = Self.grow(keys, count: keyCount, capacity: &keyCapacity) }
        (keys + keyCount).initialize(to: key)
        keyCount &+= 1
    }

    @inline(__always)
    mutating func push(value: consuming JSON) {
        if valueCount == valueCapacity { values = Self.grow(values, count: valueCount, capacity: &valueCapacity) }
        (values + valueCount).initialize(to: value)
        valueCount &+= 1
    }

    /// The keys from `first` up, moved off the stack into an array of their own.
    @inline(__always)
    mutating func popKeys(from first: Int) -> [String] {
        defer { keyCount = first }
        return Self.moveOut(keys + first, count: keyCount &- first)
    }

    /// The values from `first` up, moved off the stack into an array of their own.
    @inline(__always)
    mutating func popValues(from first: Int) -> [JSON] {
        defer { valueCount = first }
        return Self.moveOut(values + first, count: valueCount &- first)
    }

    /// Drops what was pushed above the given counts (a parse that failed).
    mutating func unwind(keysTo keyLevel: Int, valuesTo valueLevel: Int) {
        (keys + keyLevel).deinitialize(count: keyCount - keyLevel)
        (values + valueLevel).deinitialize(count: valueCount - valueLevel)
        (keyCount, valueCount) = (keyLevel, valueLevel)
    }

    /// Gives back what an empty stack holds beyond what is kept between parses.
    mutating func trimIfEmpty() {
        if keyCount == 0, keyCapacity > Self.keptKeys {
            keys.deallocate()
            keyCapacity = Self.keptKeys
            keys = .allocate(capacity: keyCapacity)
        }
        if valueCount == 0, valueCapacity > Self.keptValues {
            values.deallocate()
            valueCapacity = Self.keptValues
            values = .allocate(capacity: valueCapacity)
        }
    }

    func deallocate() {
        keys.deinitialize(count: keyCount)
        keys.deallocate()
        values.deinitialize(count: valueCount)
        values.deallocate()
    }

    /// Moved into an array allocated by `reserveCapacity`, whose allocation is specialised for the
    /// element type: `Array(unsafeUninitializedCapacity:)` allocates through a standard-library entry
    /// point that is not, and looks the array's type up at run time on every call.
    @inline(__always)
    private static func moveOut<Element>(_ start: UnsafeMutablePointer<Element>, count: Int) -> [Element] {
        var array: [Element] = []
        array.reserveCapacity(count)
        array.append(contentsOf: Moving(from: start, count: count))
        return array
    }

    /// The elements of a stretch of the stack, each moved out as it is read: no copy, no retain.
    private struct Moving<Element>: Sequence, IteratorProtocol {
        private var current: UnsafeMutablePointer<Element>
        private let end: UnsafeMutablePointer<Element>

        init(from start: UnsafeMutablePointer<Element>, count: Int) {
            (current, end) = (start, start + count)
        }

        var underestimatedCount: Int { end - current }

        @inline(__always)
        mutating func next() -> Element? {
            guard current < end else { return nil }
            defer { current += 1 }
            return current.move()
        }
    }

    private static func grow<Element>(_ old: UnsafeMutablePointer<Element>, count: Int, capacity: inout Int) -> UnsafeMutablePointer<Element> {
        capacity *= 2
        let new = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        new.moveInitialize(from: old, count: count)
        old.deallocate()
        return new
    }
}
