/// One message for subscribers, encoded once: every subscriber of a selection gets the same bytes,
/// framed for its transport the first time one of them asks.
final class SubscriberMessage {
    let version: UInt64
    /// The name of the history `version` belongs to (`HistoryName`): part of the message's SSE id.
    let history: String
    /// The message's `"type"`, also the SSE event name.
    let kind: String
    let json: [UInt8]

    private(set) lazy var webSocketFrame: [UInt8] = WebSocketFrameEncoder.frame(opcode: .text, payload: json)

    /// The frame for subscribers that negotiated permessage-deflate, compressed the first time one
    /// of them asks (the compressor keeps no context between messages, so the bytes suit them all).
    func deflatedWebSocketFrame(_ compressor: MessageCompressor) -> [UInt8] {
        if let deflatedFrame { return deflatedFrame }
        let frame = WebSocketFrameEncoder.deflatedFrame(opcode: .text, payload: json, compressor: compressor)
        deflatedFrame = frame
        return frame
    }
    private var deflatedFrame: [UInt8]?
    /// This message in its selection's shared deflate stream (`SharedDeflateStream`), once compressed there.
    var sharedDeflateEntry: SharedDeflateStream.Entry?

    /// The SSE id is `<version>@<history>` (`EventStreamID`), so that a browser's `EventSource`,
    /// which reconnects with nothing but the last id (`Last-Event-ID`), resumes in the right history.
    private(set) lazy var serverSentEvent: [UInt8] = {
        var bytes = Array("id: ".utf8)
        bytes.appendDecimal(version)
        bytes.append(EventStreamID.separator)
        bytes.append(contentsOf: history.utf8)
        bytes.append(contentsOf: "\nevent: \(kind)\ndata: ".utf8)
        // Compact JSON escapes every control character, so the data is one line.
        bytes.append(contentsOf: json)
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }()

    init(version: UInt64, history: String, kind: String, members: JSON.Object) {
        self.version = version
        self.history = history
        self.kind = kind
        var object: JSON.Object = ["type": .string(kind), "version": .integer(Int64(version))]
        for (key, value) in members { object[key] = value }
        json = JSON.object(object).jsonBytes
    }

    static func snapshot(_ version: UInt64, _ state: JSON, history: String, resumed: Bool? = nil) -> SubscriberMessage {
        var members: JSON.Object = ["state": state, "history": .string(history)]
        if let resumed { members["resumed"] = .bool(resumed) }
        return SubscriberMessage(version: version, history: history, kind: "snapshot", members: members)
    }

    static func patch(_ version: UInt64, _ operations: [JSONPatchOperation], history: String) -> SubscriberMessage {
        SubscriberMessage(version: version, history: history, kind: "patch", members: ["ops": operations.json])
    }

    static func state(_ version: UInt64, _ state: JSON, history: String) -> SubscriberMessage {
        SubscriberMessage(version: version, history: history, kind: "state", members: ["state": state])
    }
}
