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

/// A response callback that may travel through a `Sendable` completion (the core's), to be called
/// back on its loop thread. A struct around the function rather than `LoopBound<(HTTPResponse) -> Void>`:
/// a function in generic storage is re-wrapped in a thunk on every call.
/// @unchecked Sendable: `respond` checks it runs on the loop thread that created it.
struct LoopBoundResponder: @unchecked Sendable {
    private let callback: (HTTPResponse) -> Void
    private let loop: EventLoop

    init(_ callback: @escaping (HTTPResponse) -> Void, loop: EventLoop) {
        precondition(loop.isCurrent, "a LoopBoundResponder is created on its loop's thread")
        self.callback = callback
        self.loop = loop
    }

    func respond(_ response: HTTPResponse) {
        precondition(loop.isCurrent, "a LoopBoundResponder is called on its loop's thread only")
        callback(response)
    }
}
