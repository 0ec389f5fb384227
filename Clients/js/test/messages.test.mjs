// The subscription's handling of messages a well-behaved reactord rarely sends (stale or broken
// patches), driven through a scripted WebSocket injected with the WebSocket option.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ReactorClient } from "../reactor-client.js";
import { waitFor } from "../test-support/helpers.mjs";

// A stand-in for WebSocket: records every instance; the test opens it and feeds it messages.
class ScriptedSocket {
  static instances = [];
  readyState = 0;
  sent = [];
  constructor(url, protocols) {
    this.url = new URL(url);
    this.protocols = protocols;
    ScriptedSocket.instances.push(this);
  }
  open() { this.readyState = 1; this.onopen?.({}); }
  receive(message) { this.onmessage?.({ data: typeof message === "string" ? message : JSON.stringify(message) }); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() { this.readyState = 3; }
}

test("stale patches are ignored; a patch that does not apply asks for a fresh snapshot", { timeout: 10_000 }, async (t) => {
  ScriptedSocket.instances = [];
  const calls = [];
  const subscription = new ReactorClient({ url: "http://127.0.0.1:1", WebSocket: ScriptedSocket })
    .subscribe({ onState: (state, version) => calls.push([state, version]), backoff: { initial: 1, max: 5 } });
  t.after(() => subscription.close());
  const first = ScriptedSocket.instances[0];
  assert.deepEqual(first.protocols, ["reactor.v1"]);
  assert.equal(first.url.searchParams.get("since"), null);
  first.open();
  first.receive({ type: "snapshot", version: 5, state: { n: 5 } });
  first.receive({ type: "patch", version: 5, ops: [{ op: "replace", path: "/n", value: "stale" }] });
  first.receive({ type: "patch", version: 4, ops: [{ op: "replace", path: "/n", value: "older" }] });
  first.receive({ type: "something-new", version: 9 });
  first.receive({ type: "patch", version: 7, ops: [{ op: "replace", path: "/n", value: 7 }] });
  assert.deepEqual(calls, [[{ n: 5 }, 5], [{ n: 7 }, 7]], "versions skip forward, never back");

  first.receive({ type: "patch", version: 8, ops: [{ op: "remove", path: "/missing" }] });
  assert.equal(subscription.status, "reconnecting");
  assert.deepEqual(subscription.state, { n: 7 }, "the state stays as it was until the snapshot");
  await waitFor(() => ScriptedSocket.instances.length === 2, "a new connection");
  const second = ScriptedSocket.instances[1];
  assert.equal(second.url.searchParams.get("since"), null, "a broken copy resumes from a snapshot, not since=7");
  second.open();
  second.receive({ type: "snapshot", version: 8, state: { n: 8 } });
  assert.deepEqual(calls.at(-1), [{ n: 8 }, 8]);

  // A dropped connection, by contrast, resumes.
  second.readyState = 3;
  second.onclose({ code: 1006 });
  await waitFor(() => ScriptedSocket.instances.length === 3, "a third connection");
  assert.equal(ScriptedSocket.instances[2].url.searchParams.get("since"), "8");
  // Events from a socket given up on are ignored.
  second.receive({ type: "snapshot", version: 99, state: "ghost" });
  assert.equal(subscription.version, 8);
});

test("mode state: a state message replaces the value; acks and errors are matched by id", { timeout: 10_000 }, async (t) => {
  ScriptedSocket.instances = [];
  const subscription = new ReactorClient({ url: "http://127.0.0.1:1", WebSocket: ScriptedSocket, token: "tok" })
    .subscribe({ path: "/p", mode: "state" });
  t.after(() => subscription.close());
  const socket = ScriptedSocket.instances[0];
  assert.equal(socket.url.searchParams.get("mode"), "state");
  assert.equal(socket.url.searchParams.get("path"), "/p");
  assert.equal(socket.url.searchParams.get("access_token"), "tok");
  socket.open();
  socket.receive({ type: "snapshot", version: 1, state: 1 });
  socket.receive({ type: "state", version: 3, state: { v: 3 } });
  socket.receive({ type: "state", version: 2, state: "stale" });
  assert.deepEqual(subscription.state, { v: 3 });
  const one = subscription.fire({ type: "a" });
  const two = subscription.fire({ type: "b" });
  const [first, second] = socket.sent;
  assert.equal(first.type, "fire");
  assert.deepEqual(first.event, { type: "a" });
  assert.notEqual(first.id, second.id);
  socket.receive({ type: "error", id: null, problem: { type: "/problems/malformed-json", status: 400, detail: "not ours" } });
  socket.receive({ type: "error", id: second.id, problem: { type: "/problems/event-rejected", status: 422, detail: "no" } });
  socket.receive({ type: "ack", id: first.id, version: 12 });
  assert.equal(await one, 12, "the version is the ack's, not the state's");
  await assert.rejects(two, { name: "ReactorError", type: "/problems/event-rejected", status: 422, message: "no" });
});
