/// Sends every message back: the endpoint conformance suites (Autobahn) test a server's WebSocket with.
final class WebSocketEcho: WebSocketMessageHandler {
    func webSocket(_ connection: WebSocketConnection, received opcode: WebSocketOpcode, payload: [UInt8]) {
        connection.send(frame: WebSocketFrameEncoder.frame(opcode: opcode, payload: payload))
    }

    func webSocketDidDrain(_ connection: WebSocketConnection) {}

    func webSocketDidClose(_ connection: WebSocketConnection) {}
}
