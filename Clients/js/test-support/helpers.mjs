// Test helpers: a real reactord on 127.0.0.1, a TCP proxy that can cut connections underneath the
// client, and polling with a deadline. Outside test/, where node --test would run it as a test file.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { NetWebSocket } from "./net-websocket.mjs";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const binary = process.env.REACTORD_BIN ?? path.join(repo, ".build/debug/reactord");

// Node 22 has a global WebSocket, Node 20 with --experimental-websocket; Debian 12's Node 18 has none,
// and the tests then use a minimal client of their own.
if (typeof globalThis.WebSocket !== "function") {
  globalThis.WebSocket = NetWebSocket;
}

/**
 * Starts `reactord --port 0 ...args` and resolves once it printed `address=127.0.0.1:PORT`.
 * `stop()` sends SIGTERM and resolves with the exit code.
 */
export async function startServer(...args) {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: build it with swift build --product reactord (or set REACTORD_BIN)`);
  const child = spawn(binary, ["--port", "0", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reactord did not print its address in 10 s:\n${stderr}`)), 10_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const match = /address=127\.0\.0\.1:(\d+)/.exec(stderr);
      if (match) { clearTimeout(timer); resolve(Number(match[1])); }
    });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`reactord exited with ${code}:\n${stderr}`)); });
  });
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    get stderr() { return stderr; },
    async stop() {
      child.kill("SIGTERM");
      const timeout = new Promise((resolve) => setTimeout(() => { child.kill("SIGKILL"); resolve("timeout (killed)"); }, 10_000).unref());
      return Promise.race([exited, timeout]);
    },
  };
}

/**
 * A TCP proxy on 127.0.0.1 in front of a server. `drop()` destroys every connection through it (as a
 * lost network would, with an RST), `freeze()` stops carrying anything over the connections open now
 * while leaving them open (a network that went silent: no FIN, no RST), `refuse` makes it cut new
 * connections at once, `upstream` can be pointed at another server (a "restart"), `accepted` counts
 * connections and `requests` lists their first lines.
 */
export async function startProxy(upstreamPort) {
  const pairs = new Set();
  const frozen = new Set(); // pairs that carry nothing any more, still open
  const proxy = {
    upstream: upstreamPort,
    refuse: false,
    accepted: 0,
    requests: [], // the request line of each connection, e.g. "GET /subscribe?since=3 HTTP/1.1"
    drop() {
      for (const pair of pairs) for (const socket of pair) socket.resetAndDestroy();
      pairs.clear();
      for (const pair of frozen) for (const socket of pair) socket.resetAndDestroy();
      frozen.clear();
    },
    freeze() {
      for (const pair of pairs) {
        for (const socket of pair) { socket.unpipe(); socket.pause(); }
        frozen.add(pair);
      }
      pairs.clear();
    },
    close() {
      proxy.drop();
      return new Promise((resolve) => server.close(resolve));
    },
  };
  const server = net.createServer((client) => {
    proxy.accepted++;
    if (proxy.refuse) return client.resetAndDestroy();
    const upstream = net.connect(proxy.upstream, "127.0.0.1");
    const pair = [client, upstream];
    pairs.add(pair);
    const end = () => { pairs.delete(pair); frozen.delete(pair); client.destroy(); upstream.destroy(); };
    for (const socket of pair) { socket.on("error", end); socket.on("close", end); }
    client.once("data", (chunk) => proxy.requests.push(chunk.toString("latin1").split("\r\n")[0]));
    client.pipe(upstream).pipe(client);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${server.address().port}`;
  return proxy;
}

/**
 * A TCP server on 127.0.0.1 that accepts connections and never answers (a server that hangs).
 * `accepted` counts connections; `close()` destroys them and stops listening.
 */
export async function startSilentServer() {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    silent.accepted++;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  const silent = {
    accepted: 0,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  silent.url = `http://127.0.0.1:${server.address().port}`;
  return silent;
}

/** Polls `check` until it returns something truthy; fails with `what` after `timeout` ms. */
export async function waitFor(check, what, timeout = 5000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** GET /state with its version (from the ETag), by plain fetch: independent of the client under test. */
export async function serverState(url, path) {
  const response = await fetch(`${url}/state${path === undefined ? "" : `?path=${encodeURIComponent(path)}`}`);
  if (!response.ok) throw new Error(`GET /state answered ${response.status}: ${await response.text()}`);
  return { state: await response.json(), version: Number(JSON.parse(response.headers.get("etag"))) };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
