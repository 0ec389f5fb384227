// The subscription's handling of messages a well-behaved reactord rarely sends (stale or broken
// patches), driven through a scripted WebSocket injected with the WebSocket option.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ReactorClient, ReactorError } from "../reactor-client.js";
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

test("a fire unanswered within the timeout rejects with a TimeoutError; a late answer is ignored", { timeout: 10_000 }, async (t) => {
  ScriptedSocket.instances = [];
  const subscription = new ReactorClient({ url: "http://127.0.0.1:1", WebSocket: ScriptedSocket, timeout: 100 }).subscribe();
  t.after(() => subscription.close());
  const socket = ScriptedSocket.instances[0];
  socket.open();
  socket.receive({ type: "snapshot", version: 1, state: {} });
  const started = Date.now();
  const late = subscription.fire({ type: "increment", path: "/n" });
  await assert.rejects(late, { name: "TimeoutError", message: /no answer from reactord within 100 ms; the event may or may not have been applied/ });
  assert.ok(Date.now() - started < 2000);
  socket.receive({ type: "ack", id: socket.sent[0].id, version: 2 });
  const quick = subscription.fire({ type: "increment", path: "/n" }, { timeout: 5000 });
  socket.receive({ type: "ack", id: socket.sent[1].id, version: 3 });
  assert.equal(await quick, 3);
  assert.equal(subscription.status, "open", "a late answer is no reason to reconnect");
});

test("after a silence it sends a ping: answered, the connection stays; unanswered, it reconnects", { timeout: 10_000 }, async (t) => {
  ScriptedSocket.instances = [];
  const subscription = new ReactorClient({ url: "http://127.0.0.1:1", WebSocket: ScriptedSocket, timeout: 150 })
    .subscribe({ probeAfterSilence: 50, backoff: { initial: 1, max: 5 } });
  t.after(() => subscription.close());
  const socket = ScriptedSocket.instances[0];
  socket.open();
  socket.receive({ type: "snapshot", version: 1, state: {} });
  // The server answers a ping with a pong carrying its id; an older server, with an error.
  const probes = () => socket.sent.filter((message) => message.type !== "fire");
  for (let answered = 0; answered < 3; answered++) {
    await waitFor(() => probes().length > answered, `probe ${answered + 1}`);
    const probe = probes()[answered];
    assert.equal(probe.type, "ping");
    socket.receive(answered < 2 ? { type: "pong", id: probe.id }
                                : { type: "error", id: probe.id, problem: { type: "/problems/invalid-parameter", status: 400 } });
  }
  assert.equal(ScriptedSocket.instances.length, 1, "answered probes keep the connection");
  assert.equal(subscription.status, "open");
  assert.equal(new Set(probes().map((probe) => probe.id)).size, 3, "each probe has an id of its own");
  // The network goes silent: the next probe gets no answer.
  const pending = subscription.fire({ type: "increment", path: "/n" }, { timeout: 10_000 }).catch((caught) => caught);
  await waitFor(() => ScriptedSocket.instances.length === 2, "a new connection");
  const error = await pending;
  assert.match(error.message, /may or may not have been applied/);
  assert.equal(error.closeCode, 1006);
  assert.deepEqual(subscription.lastClose, { code: 1006, reason: "no answer to a liveness probe within 150 ms" });
  assert.equal(ScriptedSocket.instances[1].url.searchParams.get("since"), "1", "it resumes");
});

test("close 1009: the largest fire waiting was refused as too large, the others may have been applied", { timeout: 10_000 }, async (t) => {
  ScriptedSocket.instances = [];
  const subscription = new ReactorClient({ url: "http://127.0.0.1:1", WebSocket: ScriptedSocket })
    .subscribe({ backoff: { initial: 1, max: 5 } });
  t.after(() => subscription.close());
  const socket = ScriptedSocket.instances[0];
  socket.open();
  socket.receive({ type: "snapshot", version: 1, state: {} });
  const before = subscription.fire({ type: "set", path: "/small", value: 1 });
  const large = subscription.fire({ type: "set", path: "/large", value: "é".repeat(600) });
  const after = subscription.fire({ type: "set", path: "/after", value: "x".repeat(1000) }); // fewer bytes than the é's
  socket.readyState = 3;
  socket.onclose({ code: 1009, reason: "message too big" });
  await assert.rejects(large, (error) => {
    assert.ok(error instanceof ReactorError);
    assert.equal(error.status, 413);
    assert.equal(error.type, "/problems/body-too-large");
    assert.match(error.message, /refused the message unread.*1009.*the event was not applied/);
    return true;
  });
  for (const maybe of [before, after]) {
    await assert.rejects(maybe, (error) => !(error instanceof ReactorError) && error.closeCode === 1009 && /may or may not/.test(error.message));
  }
  assert.deepEqual(subscription.lastClose, { code: 1009, reason: "message too big" });
  await waitFor(() => ScriptedSocket.instances.length === 2, "a new connection");
});
