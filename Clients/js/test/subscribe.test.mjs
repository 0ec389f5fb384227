// subscribe() against a real reactord: the local copy follows GET /state, selections, firing over
// the socket, and surviving dropped connections and restarts (through a proxy that cuts them).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ReactorClient, ReactorError } from "../reactor-client.js";
import { startServer, startProxy, startSilentServer, serverState, waitFor, sleep } from "../test-support/helpers.mjs";

let server, http;
before(async () => {
  server = await startServer();
  http = new ReactorClient({ url: server.url });
});
after(async () => {
  assert.equal(await server.stop(), 0, "reactord exits 0 on SIGTERM");
});

// Subscribes and records every onState and onStatus call. The subscription is closed when the test
// ends, pass or fail, so that a failing test cannot leave it reconnecting forever.
function record(t, client, options = {}) {
  const log = { states: [], versions: [], statuses: [] };
  log.subscription = client.subscribe({
    backoff: { initial: 10, max: 100 },
    ...options,
    onState: (state, version) => { log.states.push(state); log.versions.push(version); },
    onStatus: (status) => log.statuses.push(status),
  });
  t.after(() => log.subscription.close());
  return log;
}

const until = (subscription, version, what = `version ${version}`) =>
  waitFor(() => subscription.version >= version, `the subscription to reach ${what} (it is at ${subscription.version})`);

const rejection = async (promise) => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
};

// Events of every kind, with member names that need escaping in the patches' pointers.
function* events(count, root) {
  yield { type: "set", path: root, value: { counter: 0, list: [], "a/b": {}, "m~n": 0 } };
  for (let i = 1; i < count; i++) {
    switch (i % 7) {
      case 0: yield { type: "increment", path: `${root}/counter` }; break;
      case 1: yield { type: "append", path: `${root}/list`, value: { i } }; break;
      case 2: yield { type: "set", path: `${root}/a~1b/k${i % 5}`, value: i }; break;
      case 3: yield { type: "merge", path: `${root}/a~1b`, value: { [`k${(i + 1) % 5}`]: null, [`m${i}`]: [i] } }; break;
      case 4: yield { type: "increment", path: `${root}/m~0n`, by: 3 }; break;
      case 5: yield { type: "patch", ops: [{ op: "copy", from: `${root}/counter`, path: `${root}/copy` }, { op: "move", from: `${root}/list/0`, path: `${root}/list/-` }] }; break;
      case 6: yield { type: "set", path: `${root}/list/0`, value: `replaced ${i}` }; break;
    }
  }
}

test("after events fired over HTTP, the local state equals GET /state", { timeout: 20_000 }, async (t) => {
  const log = record(t, new ReactorClient({ url: server.url }));
  assert.equal(log.subscription.status, "connecting");
  await waitFor(() => log.subscription.version !== undefined, "the snapshot");
  assert.deepEqual(log.statuses, ["connecting", "open"]);
  const start = log.subscription.version;
  let last;
  for (const event of events(60, "/follow")) last = await http.fire(event);
  await until(log.subscription, last);
  const truth = await serverState(server.url);
  assert.equal(truth.version, last);
  assert.deepEqual(log.subscription.state, truth.state);
  assert.equal(log.subscription.version, truth.version);
  assert.deepEqual(log.versions, Array.from({ length: last - start + 1 }, (_, i) => start + i), "one onState per version, in order");
  assert.notEqual(log.states.at(-1), log.states.at(-2), "each onState gets a new object: states are never mutated in place");
  log.subscription.close();
  assert.equal(log.subscription.status, "closed");
});

test("a path selection follows only its sub-tree, null while it is missing", { timeout: 20_000 }, async (t) => {
  const client = new ReactorClient({ url: server.url });
  const log = record(t, client, { path: "/players/0" });
  const withState = record(t, client, { path: "/players/0", mode: "state" });
  await waitFor(() => log.subscription.version !== undefined && withState.subscription.version !== undefined, "the snapshots");
  assert.equal(log.subscription.state, null);
  await http.fire({ type: "set", path: "/players", value: [{ name: "Ayla", level: 1 }] });
  await until(log.subscription, await http.fire({ type: "increment", path: "/players/0/level" }));
  const calls = log.versions.length;
  await http.fire({ type: "set", path: "/elsewhere", value: "unrelated" });
  const last = await http.fire({ type: "set", path: "/players/0/title", value: "a/b~c" });
  await until(log.subscription, last);
  await until(withState.subscription, last);
  const truth = await serverState(server.url, "/players/0");
  assert.deepEqual(truth.state, { name: "Ayla", level: 2, title: "a/b~c" });
  assert.deepEqual(log.subscription.state, truth.state);
  assert.deepEqual(withState.subscription.state, truth.state);
  assert.equal(log.versions.length, calls + 1, "nothing arrives for an unrelated change");
  await http.fire({ type: "remove", path: "/players" });
  await waitFor(() => log.subscription.state === null && withState.subscription.state === null, "the selection to read null again");
  log.subscription.close();
  withState.subscription.close();
});

test("fire over the socket: the ack's version, with the change already in state", { timeout: 20_000 }, async (t) => {
  const log = record(t, new ReactorClient({ url: server.url }));
  const early = await rejection(log.subscription.fire({ type: "increment", path: "/socket" }));
  assert.ok(!(early instanceof ReactorError), "not connected yet: a plain Error, not a problem");
  await waitFor(() => log.subscription.status === "open", "open");
  const version = await log.subscription.fire({ type: "increment", path: "/socket/count", by: 5 });
  assert.equal(log.subscription.version, version, "the firer's own patch arrives before its ack");
  assert.equal(log.subscription.state.socket.count, 5);
  assert.deepEqual(await serverState(server.url, "/socket"), { state: { count: 5 }, version });
  const [a, b] = await Promise.all([
    log.subscription.fire({ type: "increment", path: "/socket/count" }),
    log.subscription.fire({ type: "increment", path: "/socket/count" }),
  ]);
  assert.deepEqual([a, b], [version + 1, version + 2], "acks are matched to their fires");
  // Setting a value to what it is takes a version but sends no patch: the ack still has it.
  const unchanged = await log.subscription.fire({ type: "set", path: "/socket/count", value: 7 });
  assert.equal(unchanged, (await serverState(server.url)).version);
  assert.equal(unchanged, version + 3);
  assert.equal(log.subscription.version, version + 2);
  log.subscription.close();
});

test("fire over the socket: a rejected event rejects with a ReactorError and the connection stays", { timeout: 20_000 }, async (t) => {
  const log = record(t, new ReactorClient({ url: server.url }));
  await waitFor(() => log.subscription.status === "open", "open");
  const unknown = await rejection(log.subscription.fire({ type: "explode" }));
  assert.ok(unknown instanceof ReactorError);
  assert.equal(unknown.type, "/problems/unknown-event-type");
  assert.equal(unknown.status, 422);
  assert.equal(unknown.message, unknown.problem.detail);
  assert.ok(unknown.problem.knownTypes.includes("set"));
  const refused = await rejection(log.subscription.fire({ type: "remove", path: "/not/there" }));
  assert.equal(refused.type, "/problems/event-rejected");
  const invalid = await rejection(log.subscription.fire({ type: "set", path: "/x", valeu: 1 }));
  assert.equal(invalid.type, "/problems/invalid-event");
  assert.equal(log.subscription.status, "open");
  assert.equal(typeof await log.subscription.fire({ type: "set", path: "/after-errors", value: true }), "number");
  assert.deepEqual(log.statuses, ["connecting", "open"]);
  log.subscription.close();
});

test("dropped connections: it reconnects with since and converges, versions contiguous", { timeout: 30_000 }, async (t) => {
  const proxy = await startProxy(server.port);
  try {
    const log = record(t, new ReactorClient({ url: proxy.url }));
    await waitFor(() => log.subscription.version !== undefined, "the snapshot");
    const start = log.subscription.version;
    let done = false, drops = 0;
    const dropping = (async () => {
      while (!done) {
        await sleep(20 + Math.random() * 30);
        proxy.drop();
        drops++;
      }
    })();
    let last;
    for (const event of events(400, "/resume")) last = await http.fire(event);
    done = true;
    await dropping;
    await until(log.subscription, last);
    const truth = await serverState(server.url);
    assert.equal(truth.version, last);
    assert.deepEqual(log.subscription.state, truth.state);
    assert.deepEqual(log.versions, Array.from({ length: last - start + 1 }, (_, i) => start + i), "every version once, in order: nothing missed, nothing twice");
    const reconnects = log.statuses.filter((status) => status === "reconnecting").length;
    assert.ok(reconnects >= 3, `only ${reconnects} reconnects for ${drops} drops`);
    const resumed = proxy.requests.filter((line) => /[?&]since=\d+/.test(line));
    assert.ok(resumed.length >= 3, `reconnects resume with since: ${proxy.requests.join(", ")}`);
    assert.doesNotMatch(proxy.requests[0], /since=/, "the first connection asks for a snapshot");
    log.subscription.close();
  } finally {
    await proxy.close();
  }
});

test("status: connecting, open, reconnecting with capped backoff while refused, open, closed", { timeout: 20_000 }, async (t) => {
  const proxy = await startProxy(server.port);
  try {
    const log = record(t, new ReactorClient({ url: proxy.url }), { backoff: { initial: 20, max: 80 } });
    await waitFor(() => log.subscription.status === "open", "open");
    assert.deepEqual(log.statuses, ["connecting", "open"]);

    proxy.refuse = true;
    const accepted = proxy.accepted;
    proxy.drop();
    await waitFor(() => log.subscription.status === "reconnecting", "reconnecting");
    await sleep(1000);
    const attempts = proxy.accepted - accepted;
    // Delays of 10-20, 20-40, then 40-80 ms: about 12 to 27 attempts in a second. Without backoff
    // there would be hundreds; without retries, none.
    assert.ok(attempts >= 5 && attempts <= 40, `${attempts} attempts in 1 s`);
    assert.equal(log.subscription.status, "reconnecting");
    assert.ok(!log.statuses.slice(2).includes("open"), "never open while refused");

    const version = await http.fire({ type: "set", path: "/status", value: "missed while away" });
    proxy.refuse = false;
    await until(log.subscription, version);
    assert.equal(log.subscription.status, "open");
    assert.equal(log.subscription.state.status, "missed while away");
    assert.deepEqual(log.statuses, ["connecting", "open", "reconnecting", "open"]);

    log.subscription.close();
    assert.deepEqual(log.statuses, ["connecting", "open", "reconnecting", "open", "closed"]);
    const calls = log.versions.length, connections = proxy.accepted;
    await http.fire({ type: "set", path: "/status", value: "after close" });
    await sleep(300);
    assert.equal(log.versions.length, calls, "no onState after close");
    assert.equal(proxy.accepted, connections, "no reconnection after close");
    log.subscription.close();
    assert.equal(log.statuses.at(-1), "closed");
    assert.equal(log.statuses.length, 5, "closing twice reports nothing new");
  } finally {
    await proxy.close();
  }
});

test("a fire still unanswered when the connection drops rejects with a plain Error", { timeout: 20_000 }, async (t) => {
  const proxy = await startProxy(server.port);
  try {
    const log = record(t, new ReactorClient({ url: proxy.url }));
    await waitFor(() => log.subscription.status === "open", "open");
    const pending = log.subscription.fire({ type: "increment", path: "/maybe" });
    proxy.drop();
    const error = await rejection(pending);
    assert.ok(!(error instanceof ReactorError));
    assert.match(error.message, /may or may not/);
    await waitFor(() => log.subscription.status === "open", "open again");
    log.subscription.close();
  } finally {
    await proxy.close();
  }
});

test("a connection that goes silent: the fire times out, the probe goes unanswered, and it reconnects", { timeout: 20_000 }, async (t) => {
  const proxy = await startProxy(server.port);
  try {
    const log = record(t, new ReactorClient({ url: proxy.url, timeout: 400 }), { probeAfterSilence: 200 });
    await waitFor(() => log.subscription.version !== undefined, "the snapshot");
    proxy.freeze(); // no FIN, no RST: nothing gets through any more, and the socket still reads open
    const started = Date.now();
    const fired = rejection(log.subscription.fire({ type: "increment", path: "/silent/fire" }));
    const version = await http.fire({ type: "set", path: "/silent/missed", value: true });
    const timedOut = await fired;
    assert.equal(timedOut.name, "TimeoutError");
    assert.match(timedOut.message, /within 400 ms; the event may or may not have been applied/);
    await waitFor(() => log.statuses.includes("reconnecting"), "the silence noticed", 5000);
    assert.ok(Date.now() - started < 3000, `noticed after ${Date.now() - started} ms`);
    assert.match(log.subscription.lastClose.reason, /liveness probe/);
    await until(log.subscription, version);
    assert.equal(log.subscription.status, "open");
    assert.equal(log.subscription.state.silent.missed, true);
    assert.match(proxy.requests.at(-1), /since=\d+/, "it resumed");
    log.subscription.close();
  } finally {
    await proxy.close();
  }
});

test("reactord answers the liveness probe: an idle connection stays open", { timeout: 20_000 }, async (t) => {
  const proxy = await startProxy(server.port);
  try {
    const reader = await startServer("--token", "reader:r3ad:read");
    t.after(async () => assert.equal(await reader.stop(), 0));
    const readerProxy = await startProxy(reader.port);
    t.after(() => readerProxy.close());
    // A token that may only read is answered too: the probe is not a fire.
    const logs = [
      record(t, new ReactorClient({ url: proxy.url, timeout: 1000 }), { probeAfterSilence: 50 }),
      record(t, new ReactorClient({ url: readerProxy.url, timeout: 1000, token: "r3ad" }), { probeAfterSilence: 50 }),
    ];
    await waitFor(() => logs.every((log) => log.subscription.status === "open"), "open");
    await sleep(1500); // some 25 probes each: one unanswered would have failed it after 1000 ms
    for (const log of logs) assert.deepEqual(log.statuses, ["connecting", "open"]);
    assert.equal(proxy.accepted + readerProxy.accepted, 2, "no reconnection");
    for (const log of logs) log.subscription.close();
  } finally {
    await proxy.close();
  }
});

test("a handshake that never completes is given up after the timeout and tried again", { timeout: 10_000 }, async (t) => {
  const silent = await startSilentServer();
  t.after(() => silent.close());
  const log = record(t, new ReactorClient({ url: silent.url, timeout: 100 }), { backoff: { initial: 10, max: 20 } });
  await waitFor(() => silent.accepted >= 3, "three handshakes");
  assert.deepEqual(log.statuses.slice(0, 2), ["connecting", "reconnecting"]);
  assert.ok(!log.statuses.includes("open"));
  assert.deepEqual(log.subscription.lastClose, { code: 1006, reason: "no WebSocket handshake within 100 ms" });
  log.subscription.close();
});

test("a fire larger than --max-message-bytes rejects with body-too-large and is not applied", { timeout: 20_000 }, async (t) => {
  const small = await startServer("--max-message-bytes", "4096");
  try {
    const log = record(t, new ReactorClient({ url: small.url }));
    await waitFor(() => log.subscription.version !== undefined, "the snapshot");
    const error = await rejection(log.subscription.fire({ type: "set", path: "/big", value: "x".repeat(5000) }));
    assert.ok(error instanceof ReactorError, error.message);
    assert.equal(error.status, 413);
    assert.equal(error.type, "/problems/body-too-large");
    assert.match(error.message, /the event was not applied/);
    assert.equal(log.subscription.lastClose.code, 1009);
    assert.deepEqual(await serverState(small.url), { state: {}, version: 0 }, "not applied");
    await waitFor(() => log.subscription.status === "open", "open again");
    assert.equal(await log.subscription.fire({ type: "set", path: "/small", value: "x".repeat(3000) }), 1);
    log.subscription.close();
  } finally {
    assert.equal(await small.stop(), 0);
  }
});

test("after a server restart the resumed:false snapshot replaces the state", { timeout: 30_000 }, async (t) => {
  const first = await startServer();
  const second = await startServer();
  const proxy = await startProxy(first.port);
  try {
    const one = new ReactorClient({ url: first.url }), two = new ReactorClient({ url: second.url });
    for (let i = 0; i < 5; i++) await one.fire({ type: "append", path: "/old", value: i });
    await two.fire({ type: "set", path: "/new", value: "fresh" });
    const log = record(t, new ReactorClient({ url: proxy.url }));
    await until(log.subscription, 5);
    assert.deepEqual(log.subscription.state, { old: [0, 1, 2, 3, 4] });

    // The first server goes away (its subscribers get a 1001 close); the proxy now leads to the
    // second, whose version 1 is behind the since=5 the client resumes with.
    proxy.upstream = second.port;
    assert.equal(await first.stop(), 0);
    await waitFor(() => log.subscription.version === 1, "the second server's snapshot");
    assert.deepEqual(log.subscription.state, { new: "fresh" });
    assert.ok(log.statuses.includes("reconnecting"));
    assert.equal(await two.fire({ type: "set", path: "/new", value: "followed" }), 2);
    await until(log.subscription, 2);
    assert.deepEqual(log.subscription.state, (await serverState(second.url)).state);
    log.subscription.close();
  } finally {
    await proxy.close();
    await first.stop();
    assert.equal(await second.stop(), 0);
  }
});

test("a server that started over at the same version is not taken for the one left: its snapshot replaces the state", { timeout: 30_000 }, async (t) => {
  const first = await startServer();
  const second = await startServer();
  const proxy = await startProxy(first.port);
  try {
    const one = new ReactorClient({ url: first.url }), two = new ReactorClient({ url: second.url });
    for (let i = 0; i < 5; i++) await one.fire({ type: "append", path: "/old", value: i });
    for (let i = 0; i < 5; i++) await two.fire({ type: "set", path: `/new${i}`, value: i });
    const log = record(t, new ReactorClient({ url: proxy.url }));
    await until(log.subscription, 5);
    // Both servers are at version 5, each in a history of its own: since=5 alone would resume
    // (nothing to send) on another state.
    proxy.upstream = second.port;
    assert.equal(await first.stop(), 0);
    const expected = (await serverState(second.url)).state;
    await waitFor(() => JSON.stringify(log.subscription.state) === JSON.stringify(expected), "the second server's snapshot");
    assert.equal(log.subscription.version, 5);
    assert.equal(await two.fire({ type: "set", path: "/new0", value: "followed" }), 6);
    await until(log.subscription, 6);
    assert.deepEqual(log.subscription.state, (await serverState(second.url)).state);
    log.subscription.close();
  } finally {
    await proxy.close();
    await first.stop();
    assert.equal(await second.stop(), 0);
  }
});

test("with tokens the subscription passes access_token; without one it never opens", { timeout: 20_000 }, async (t) => {
  const secured = await startServer("--token", "app:s3cret:read+fire", "--token", "reader:r3ad:read");
  try {
    const app = record(t, new ReactorClient({ url: secured.url, token: "s3cret" }));
    await waitFor(() => app.subscription.version === 0, "the snapshot");
    assert.equal(await app.subscription.fire({ type: "set", path: "/x", value: 1 }), 1);
    assert.deepEqual(app.subscription.state, { x: 1 });

    const reader = record(t, new ReactorClient({ url: secured.url, token: "r3ad" }));
    await waitFor(() => reader.subscription.version === 1, "the reader's snapshot");
    const forbidden = await rejection(reader.subscription.fire({ type: "set", path: "/x", value: 2 }));
    assert.equal(forbidden.type, "/problems/forbidden");
    assert.equal(forbidden.status, 403);

    const anonymous = record(t, new ReactorClient({ url: secured.url }));
    await waitFor(() => anonymous.statuses.filter((s) => s === "reconnecting").length >= 1, "a refused handshake");
    await sleep(200);
    assert.ok(!anonymous.statuses.includes("open"), anonymous.statuses.join());
    assert.equal(anonymous.subscription.state, undefined);
    for (const log of [app, reader, anonymous]) log.subscription.close();
  } finally {
    assert.equal(await secured.stop(), 0);
  }
});

test("subscribeURL: ws or wss, the selection, since and access_token", () => {
  const client = new ReactorClient({ url: "https://example.test/reactor/", token: "t o/k" });
  const url = new URL(client.subscribeURL({ path: "/a b", mode: "state", since: 7 }));
  assert.equal(url.protocol, "wss:");
  assert.equal(url.pathname, "/reactor/subscribe");
  assert.equal(url.searchParams.get("path"), "/a b");
  assert.equal(url.searchParams.get("mode"), "state");
  assert.equal(url.searchParams.get("since"), "7");
  assert.equal(url.searchParams.get("access_token"), "t o/k");
  assert.match(new ReactorClient({ url: "http://127.0.0.1:1" }).subscribeURL(), /^ws:\/\/127\.0\.0\.1:1\/subscribe$/);
});
