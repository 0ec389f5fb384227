/// What one connection can make the server buffer. Both are checked from a frame's header,
/// before any of its payload is buffered; exceeding either fails the connection with 1009.
public struct WebSocketLimits: Hashable, Sendable {
    /// Largest payload of a single data frame.
    public var maxFramePayload: Int
    /// Largest reassembled message (the sum of its fragments' payloads).
    public var maxMessageSize: Int

    /// Subscription clients send small commands, so the defaults are modest. The Autobahn
    /// suite's 9.x cases send 16 MiB messages, single-frame too: run it with 16 MiB for both.
    public init(maxFramePayload: Int = 1 << 20, maxMessageSize: Int = 1 << 20) {
        precondition(maxFramePayload >= 0 && maxMessageSize >= 0, "limits must not be negative")
        self.maxFramePayload = maxFramePayload
        self.maxMessageSize = maxMessageSize
    }
}
