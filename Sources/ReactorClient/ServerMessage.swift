/// One message from the server, the same over WebSocket and Server-Sent Events (docs/protocol.md).
enum ServerMessage: Equatable {
    /// The selected value at `version`; it replaces whatever the client holds, even at a lower version
    /// (the server may have restarted and lost versions). `history` names the history the version
    /// belongs to (nil from a server that does not say).
    case snapshot(version: UInt64, state: JSON, history: String? = nil)
    /// The RFC 6902 operations from the previous version the client holds to `version`.
    case patch(version: UInt64, operations: [JSONPatchOperation])
    /// The whole selected value at `version` (subscriptions with `mode=state`).
    case state(version: UInt64, state: JSON)
    /// A fire over the WebSocket was applied at `version`.
    case ack(id: JSON, version: UInt64)
    /// A fire over the WebSocket was refused.
    case error(id: JSON, problem: RemoteProblem)
    /// A message type this client does not know, from a newer server: ignored.
    case unknown(type: String)

    /// Why a message cannot be used; the client then starts over from a snapshot.
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    init(text: String) throws(Unreadable) {
        let message: JSON
        do {
            message = try JSONParser.carrier.parse(text)
        } catch {
            throw Unreadable(description: "a message that is not JSON (\(error)): \(text.prefix(200))")
        }
        guard let type = message["type"]?.stringValue else {
            throw Unreadable(description: "a message without a type: \(text.prefix(200))")
        }
        func version() throws(Unreadable) -> UInt64 {
            guard let number = message["version"]?.int64Value, let version = UInt64(exactly: number) else {
                throw Unreadable(description: "a \(type) message without a version: \(text.prefix(200))")
            }
            return version
        }
        switch type {
        case "snapshot":
            self = .snapshot(version: try version(), state: message["state"] ?? .null, history: message["history"]?.stringValue)
        case "state":
            self = .state(version: try version(), state: message["state"] ?? .null)
        case "patch":
            let version = try version()
            do {
                self = .patch(version: version, operations: try JSONPatch.operations(from: message["ops"] ?? .null))
            } catch {
                throw Unreadable(description: "a patch at version \(version) that is not a JSON Patch: \(error)")
            }
        case "ack":
            self = .ack(id: message["id"] ?? .null, version: try version())
        case "error":
            let problem = message["problem"] ?? ["type": "about:blank", "title": "Error", "detail": .string("the server answered \(text.prefix(200))")]
            self = .error(id: message["id"] ?? .null, problem: RemoteProblem(json: problem))
        default:
            self = .unknown(type: type)
        }
    }
}
