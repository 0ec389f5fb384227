/// A value that may travel through `Sendable` APIs but is only ever used on its loop's thread
/// (a connection's respond callback handed to the core's completion, say).
/// @unchecked Sendable: `value` checks it is read on the loop thread that created it.
public struct LoopBound<Value>: @unchecked Sendable {
    private let _value: Value
    private let loop: EventLoop

    public init(_ value: Value, loop: EventLoop) {
        precondition(loop.isCurrent, "a LoopBound is created on its loop's thread")
        _value = value
        self.loop = loop
    }

    public var value: Value {
        precondition(loop.isCurrent, "a LoopBound is used on its loop's thread only")
        return _value
    }
}
