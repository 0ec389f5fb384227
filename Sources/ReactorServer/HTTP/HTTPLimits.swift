/// Per-request resource limits. They bound what one connection can make the server buffer.
public struct HTTPLimits: Hashable, Sendable {
    /// Request line plus header section, counted in bytes on the wire (431 when exceeded).
    /// Trailers of chunked bodies get the same budget again.
    public var maxHeaderBytes: Int
    /// Decoded body size (413 when exceeded).
    public var maxBodyBytes: Int
    /// Header fields per request, and trailer fields per request (431 when exceeded).
    public var maxHeaderCount: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 1024 * 1024, maxHeaderCount: Int = 100) {
        // Header offsets are stored as UInt32 to keep the per-field index small.
        precondition(maxHeaderBytes > 0 && maxHeaderBytes < Int(UInt32.max), "maxHeaderBytes out of range")
        precondition(maxBodyBytes >= 0 && maxHeaderCount >= 0, "limits must not be negative")
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderCount = maxHeaderCount
    }
}
