/// A FIFO that reuses its storage: appends and pops are O(1) and allocate nothing once warm.
@usableFromInline
struct JobQueue<Element> {
    @usableFromInline var storage: [Element?] = []
    @usableFromInline var head = 0

    @inlinable init() {}

    @inlinable var isEmpty: Bool { head == storage.count }

    @inlinable mutating func append(_ element: consuming Element) {
        storage.append(element)
    }

    @inlinable mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count {
            // Drained: keep the capacity, drop the consumed slots.
            storage.removeAll(keepingCapacity: storage.count <= 1024)
            head = 0
        }
        return element
    }
}
