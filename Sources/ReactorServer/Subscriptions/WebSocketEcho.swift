/// Sends every message back: the endpoint conformance suites (Autobahn) test a server's WebSocket with.
final class WebSocketEcho: WebSocketMessageHandler {
    func webSocket(_ connection: WebSocketServerConnection, received opcode: WebSocketOpcode, payload: [UInt8]) {
        connection.send(message: payload, opcode: opcode)
    }

    func webSocketDidDrain(_ connection: WebSocketServerConnection) {}

    func webSocketDidClose(_ connection: WebSocketServerConnection) {}
}
