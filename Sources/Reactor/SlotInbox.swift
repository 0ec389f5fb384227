#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Values handed from any thread to the one thread that consumes them, in order, written into
/// slots of blocks rather than into a node each: a producer claims the next slot with one
/// compare-and-swap, and the consumer reads the slots in address order. The core's inbox for jobs
/// fired from other threads, the path of every event an app fires from its own threads: a node per
/// job would be allocated on one thread and freed on the other, which costs more than the hand-over
/// itself. Here a block of 63 slots is allocated only when the consumer has not left one to reuse.
///
/// Waking the consumer works as in `AtomicInbox`: the inbox is idle when the consumer has nothing
/// and owes no turn; only the push that finds it idle wakes it, and the consumer repeats `takeAll`
/// until `endTaking` finds nothing new and makes it idle again.
///
/// `tail` holds the next position to claim, shifted left by one, and the idle flag in its low bit.
/// A block has 64 positions: 63 slots and the position after them, where `tail` stands while the
/// producer that claimed the block's last slot links the next block in (others wait for it). That
/// producer links it before it fills its slot, so the consumer finds the next block ready whenever
/// it has read a block's last slot.
///
/// The consumer takes slots in the order they were claimed, so it waits (spinning, then yielding
/// the CPU) for a slot claimed and not yet written. Its producer is then a few instructions from
/// writing it; one descheduled right there holds the consumer up until it runs again, the price of
/// claiming a slot without allocating a node.
///
/// The library's one use of raw memory shared between threads besides `AtomicInbox`, kept here: a
/// slot is written by the producer that claimed it, then published by its flag (releasing), and
/// read and moved out by the consumer only after it saw the flag (acquiring); a block is freed or
/// recycled only once the consumer has read every slot in it, after which no producer touches it.
/// @unchecked Sendable: its shared fields are atomics; `headPosition` and `headBlock` are confined to the consumer.
@usableFromInline
final class SlotInbox<Element: Sendable>: @unchecked Sendable {
    @usableFromInline static var slotsPerBlock: Int { 63 }
    @usableFromInline static var positionsPerBlock: Int { 64 }

    /// One block of slots in a single allocation, with no reference count (both threads reach it,
    /// and counting would make them write the same word): the link to the next block on a cache
    /// line of its own, then the slots, each a value followed by its flag, so that a producer's
    /// write and the consumer's read of one slot touch the same lines.
    @usableFromInline
    struct Block {
        @usableFromInline let base: UnsafeMutableRawPointer

        @inlinable init(_ base: UnsafeMutableRawPointer) { self.base = base }

        @inlinable static var slotsOffset: Int { 64 }
        @inlinable static var flagOffset: Int { MemoryLayout<Element>.stride }
        @inlinable static var slotStride: Int {
            let alignment = max(MemoryLayout<Element>.alignment, MemoryLayout<Atomic<Bool>>.alignment)
            return (flagOffset + MemoryLayout<Atomic<Bool>>.size + alignment - 1) / alignment * alignment
        }
        @inlinable static var byteCount: Int { slotsOffset + slotsPerBlock * slotStride }

        /// The block after this one: set once, by the producer that claimed this block's last slot.
        @inlinable var next: UnsafeMutablePointer<Atomic<UnsafeMutableRawPointer?>> {
            base.assumingMemoryBound(to: Atomic<UnsafeMutableRawPointer?>.self)
        }
        @inlinable func slot(_ offset: Int) -> UnsafeMutablePointer<Element> {
            (base + Self.slotsOffset + offset * Self.slotStride).assumingMemoryBound(to: Element.self)
        }
        /// Whether the slot holds a value written and not yet taken.
        @inlinable func filled(_ offset: Int) -> UnsafeMutablePointer<Atomic<Bool>> {
            (base + Self.slotsOffset + offset * Self.slotStride + Self.flagOffset).assumingMemoryBound(to: Atomic<Bool>.self)
        }

        @usableFromInline static func allocate() -> UnsafeMutableRawPointer {
            precondition(MemoryLayout<Element>.alignment <= 64)
            let block = Block(UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 64))
            block.base.bindMemory(to: Atomic<UnsafeMutableRawPointer?>.self, capacity: 1).initialize(to: Atomic(nil))
            for offset in 0..<slotsPerBlock {
                (block.base + slotsOffset + offset * slotStride).bindMemory(to: Element.self, capacity: 1)
                (block.base + slotsOffset + offset * slotStride + flagOffset).bindMemory(to: Atomic<Bool>.self, capacity: 1)
                    .initialize(to: Atomic(false))
            }
            return block.base
        }

        /// Frees the block, with the values still in it.
        @usableFromInline func deallocate() {
            for offset in 0..<SlotInbox.slotsPerBlock where filled(offset).pointee.load(ordering: .acquiring) {
                slot(offset).deinitialize(count: 1)
            }
            base.deallocate()
        }
    }

    /// Position to claim next, times two, plus one when idle.
    @usableFromInline let tail = Atomic<Int>(1)
    /// The block the claimed positions fall in.
    @usableFromInline let tailBlock: Atomic<UnsafeMutableRawPointer>
    /// A block the consumer left, emptied, for the next producer that needs one.
    @usableFromInline let spareBlock = Atomic<UnsafeMutableRawPointer?>(nil)
    /// The consumer's place: the next position to read and its block. Only the consumer touches
    /// them, hence @exclusivity(unchecked).
    @exclusivity(unchecked) @usableFromInline var headPosition = 0
    @exclusivity(unchecked) @usableFromInline var headBlock: UnsafeMutableRawPointer

    @usableFromInline init() {
        let first = Block.allocate()
        headBlock = first
        tailBlock = Atomic(first)
    }

    deinit {
        var block: UnsafeMutableRawPointer? = headBlock
        while let base = block {
            block = Block(base).next.pointee.load(ordering: .acquiring)
            Block(base).deallocate()
        }
        if let spare = spareBlock.load(ordering: .acquiring) { Block(spare).deallocate() }
    }

    /// True when everything pushed so far was taken. On the consumer only.
    @inlinable var isEmpty: Bool {
        tail.load(ordering: .acquiring) >> 1 == headPosition
    }

    /// Adds `element` after every element pushed before it; true when the inbox was idle, and the
    /// caller must then wake the consumer.
    @inlinable
    func push(_ element: consuming Element) -> Bool {
        let slot = claim()
        write(element, into: slot)
        return slot.wasIdle
    }

    /// A slot claimed by a producer, to be written by it (`write`), and whether the inbox was idle.
    @usableFromInline
    struct Claim {
        @usableFromInline let block: UnsafeMutableRawPointer
        @usableFromInline let offset: Int
        @usableFromInline let wasIdle: Bool
        @inlinable init(block: UnsafeMutableRawPointer, offset: Int, wasIdle: Bool) {
            self.block = block
            self.offset = offset
            self.wasIdle = wasIdle
        }
    }

    /// Takes the next position: from here on the consumer waits for this slot before any later one.
    /// The producer that takes a block's last slot links the next block in before it returns.
    @inlinable
    func claim() -> Claim {
        var spare: UnsafeMutableRawPointer?
        var attempts = 0
        while true {
            let claimed = tail.load(ordering: .acquiring)
            let position = claimed >> 1
            let offset = position % Self.positionsPerBlock
            if offset == Self.slotsPerBlock {
                // Another producer is linking the next block in.
                attempts = Self.backOff(attempts)
                continue
            }
            let isLastSlot = offset == Self.slotsPerBlock - 1
            if isLastSlot && spare == nil { spare = takeSpareBlock() }
            let block = tailBlock.load(ordering: .acquiring)
            let (exchanged, _) = tail.compareExchange(
                expected: claimed, desired: (position + 1) << 1, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
            guard exchanged else { continue }
            if isLastSlot, let next = spare {
                spare = nil
                tailBlock.store(next, ordering: .releasing)
                Block(block).next.pointee.store(next, ordering: .releasing)
                // Past this block's last position: producers go on in the next block.
                tail.add(2, ordering: .releasing)
            }
            if let spare { giveBack(spare) }
            return Claim(block: block, offset: offset, wasIdle: claimed & 1 == 1)
        }
    }

    /// Writes the claimed slot and publishes it to the consumer.
    @inlinable
    func write(_ element: consuming Element, into slot: Claim) {
        let block = Block(slot.block)
        block.slot(slot.offset).initialize(to: element)
        block.filled(slot.offset).pointee.store(true, ordering: .releasing)
    }

    /// Hands every element pushed before the call to `body`, oldest first (a slot claimed and not
    /// yet written is waited for: its producer is between its claim and its write); pushes after
    /// the call began wait for the next call. So a `body` that takes from the inbox itself
    /// (re-entrantly, as the core does when a job fires on its executor) takes everything the outer
    /// call would have handed over after it, in order, and the outer call ends. On the consumer
    /// only; a consumer woken by a push, or one that took, owes an `endTaking`.
    @inlinable
    func takeAll(_ body: (consuming Element) -> Void) {
        let end = tail.load(ordering: .acquiring) >> 1
        while headPosition < end {
            let block = Block(headBlock)
            let offset = headPosition % Self.positionsPerBlock
            var attempts = 0
            while !block.filled(offset).pointee.load(ordering: .acquiring) { attempts = Self.backOff(attempts) }
            let element = block.slot(offset).move()
            block.filled(offset).pointee.store(false, ordering: .relaxed)
            headPosition += 1
            if offset == Self.slotsPerBlock - 1 { leaveBlock() }
            body(consume element)
        }
    }

    /// Makes the inbox idle if everything claimed was taken, and returns true; returns false, still
    /// taking, when something was claimed meanwhile: take it.
    @inlinable
    func endTaking() -> Bool {
        let claimed = tail.load(ordering: .acquiring)
        return claimed >> 1 == headPosition
            && tail.compareExchange(expected: claimed, desired: claimed | 1, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed).exchanged
    }

    /// Steps from a block whose every slot was read to the next, which its last slot's producer
    /// linked before writing that slot, and keeps the old one as the spare.
    @usableFromInline
    func leaveBlock() {
        let old = headBlock
        headBlock = Block(old).next.pointee.load(ordering: .acquiring)!
        headPosition += 1
        Block(old).next.pointee.store(nil, ordering: .relaxed)
        giveBack(old)
    }

    @usableFromInline
    func takeSpareBlock() -> UnsafeMutableRawPointer {
        spareBlock.exchange(nil, ordering: .acquiring) ?? Block.allocate()
    }

    /// Keeps `block`, empty, as the spare, or frees it when there already is one.
    @usableFromInline
    func giveBack(_ block: UnsafeMutableRawPointer) {
        if let other = spareBlock.exchange(block, ordering: .acquiringAndReleasing) { Block(other).deallocate() }
    }

    /// Waits a moment for another thread to finish a step it began: spins first, then yields the CPU.
    @usableFromInline
    static func backOff(_ attempts: Int) -> Int {
        if attempts < 64 {
            for _ in 0..<(1 << min(attempts, 6)) { spinLoopHint() }
        } else {
            sched_yield()
        }
        return attempts + 1
    }

    @inline(__always) @usableFromInline
    static func spinLoopHint() {
        // Nothing portable in Swift; an empty atomic load keeps the loop from being optimised away.
        _ = _spinCounter.load(ordering: .relaxed)
    }
}

private let _spinCounter = Atomic<Int>(0)
