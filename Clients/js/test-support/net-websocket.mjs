// A minimal RFC 6455 client over node:net, for Node versions without a global WebSocket (Debian
// 12's Node 18). It covers what the client module uses: the on* handlers, readyState, text
// messages, pings and the close handshake; the server never fragments its messages.
import crypto from "node:crypto";
import net from "node:net";

export class NetWebSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;

  #socket;
  #buffer = Buffer.alloc(0);
  #open = false;

  constructor(url, protocols = []) {
    const target = new URL(url);
    this.readyState = NetWebSocket.CONNECTING;
    this.onopen = this.onmessage = this.onerror = this.onclose = null;
    const key = crypto.randomBytes(16).toString("base64");
    const offered = [].concat(protocols);
    this.#socket = net.connect(Number(target.port) || 80, target.hostname, () => {
      this.#socket.write(
        `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nUpgrade: websocket\r\n` +
          `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
          (offered.length ? `Sec-WebSocket-Protocol: ${offered.join(", ")}\r\n` : "") + "\r\n",
      );
    });
    this.#socket.on("data", (chunk) => this.#receive(chunk));
    this.#socket.on("error", () => this.#fail());
    this.#socket.on("close", () => this.#closed(1006, ""));
  }

  send(text) {
    if (this.readyState !== NetWebSocket.OPEN) throw new Error("the WebSocket is not open");
    this.#send(0x1, Buffer.from(text));
  }

  close(code = 1000) {
    if (this.readyState >= NetWebSocket.CLOSING) return;
    if (this.readyState === NetWebSocket.OPEN) {
      const payload = Buffer.alloc(2);
      payload.writeUInt16BE(code);
      this.#send(0x8, payload);
    }
    this.readyState = NetWebSocket.CLOSING;
    this.#socket.end();
  }

  #receive(chunk) {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    if (!this.#open) {
      const end = this.#buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = this.#buffer.subarray(0, end).toString("latin1");
      this.#buffer = this.#buffer.subarray(end + 4);
      if (!head.startsWith("HTTP/1.1 101 ")) return this.#fail();
      this.#open = true;
      this.readyState = NetWebSocket.OPEN;
      this.onopen?.({});
    }
    while (this.#buffer.length >= 2) {
      const opcode = this.#buffer[0] & 0x0f;
      let length = this.#buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.#buffer.length < 4) return;
        length = this.#buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.#buffer.length < 10) return;
        length = Number(this.#buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.#buffer.length < offset + length) return;
      const payload = this.#buffer.subarray(offset, offset + length);
      this.#buffer = this.#buffer.subarray(offset + length);
      if (opcode === 0x1) this.onmessage?.({ data: payload.toString("utf8") });
      else if (opcode === 0x9) this.#send(0xa, payload);
      else if (opcode === 0x8) this.#closed(payload.length >= 2 ? payload.readUInt16BE(0) : 1005, payload.subarray(2).toString());
    }
  }

  /** Client frames are masked (RFC 6455 §5.3). */
  #send(opcode, payload) {
    const mask = crypto.randomBytes(4);
    const header =
      payload.length < 126 ? Buffer.from([0x80 | opcode, 0x80 | payload.length])
        : Buffer.from([0x80 | opcode, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
    const masked = Buffer.from(payload.map((byte, index) => byte ^ mask[index % 4]));
    this.#socket.write(Buffer.concat([header, mask, masked]));
  }

  #fail() {
    if (this.readyState === NetWebSocket.CLOSED) return;
    this.onerror?.({});
    this.#closed(1006, "");
  }

  #closed(code, reason) {
    if (this.readyState === NetWebSocket.CLOSED) return;
    this.readyState = NetWebSocket.CLOSED;
    this.#socket.destroy();
    this.onclose?.({ code, reason, wasClean: code !== 1006 });
  }
}
