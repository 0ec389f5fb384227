// fire, fireBatch and state over HTTP against a real reactord, and the problems they reject with.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ReactorClient, ReactorError } from "../reactor-client.js";
import net from "node:net";
import { startServer, startSilentServer, serverState } from "../test-support/helpers.mjs";

let server, client;
before(async () => {
  server = await startServer();
  client = new ReactorClient({ url: server.url });
});
after(async () => {
  assert.equal(await server.stop(), 0, "reactord exits 0 on SIGTERM");
});

const rejection = async (promise) => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
};

test("fire resolves with the version, and state reads what was fired", { timeout: 10_000 }, async () => {
  const { version: start } = await serverState(server.url);
  const first = await client.fire({ type: "set", path: "/http/name", value: "Ayla" });
  const second = await client.fire({ type: "increment", path: "/http/level", by: 2 });
  assert.equal(first, start + 1);
  assert.equal(second, start + 2);
  assert.deepEqual(await client.state({ path: "/http" }), { name: "Ayla", level: 2 });
  assert.equal(await client.state({ path: "/http/level" }), 2);
  const whole = await client.state();
  assert.deepEqual(whole, (await serverState(server.url)).state);
  assert.deepEqual(whole.http, { name: "Ayla", level: 2 });
});

test("state of a path with nothing there rejects with path-not-found", { timeout: 10_000 }, async () => {
  const error = await rejection(client.state({ path: "/no/such/thing" }));
  assert.ok(error instanceof ReactorError);
  assert.equal(error.status, 404);
  assert.equal(error.type, "/problems/path-not-found");
});

test("fireBatch applies all events, each at its own version", { timeout: 10_000 }, async () => {
  const { version: start } = await serverState(server.url);
  const answer = await client.fireBatch([
    { type: "set", path: "/batch", value: [] },
    { type: "append", path: "/batch", value: "a" },
    { type: "append", path: "/batch", value: "b" },
  ]);
  assert.deepEqual(answer, { version: start + 3, applied: 3 });
  assert.deepEqual(await client.state({ path: "/batch" }), ["a", "b"]);
});

test("a failing batch applies nothing and rejects with the failing event's index", { timeout: 10_000 }, async () => {
  const before = await serverState(server.url);
  const error = await rejection(client.fireBatch([
    { type: "set", path: "/atomic", value: 1 },
    { type: "remove", path: "/does/not/exist" },
  ]));
  assert.ok(error instanceof ReactorError);
  assert.equal(error.type, "/problems/event-rejected");
  assert.equal(error.status, 422);
  assert.equal(error.problem.index, 1);
  assert.deepEqual(await serverState(server.url), before, "nothing was applied");
});

test("fireBatch with mode prune applies the accepted events and lists the rejected", { timeout: 10_000 }, async () => {
  const { version: start } = await serverState(server.url);
  const answer = await client.fireBatch([
    { type: "set", path: "/pruned", value: 1 },
    { type: "remove", path: "/does/not/exist" },
    { type: "increment", path: "/pruned" },
  ], { mode: "prune" });
  assert.equal(answer.version, start + 2);
  assert.equal(answer.applied, 2);
  assert.equal(answer.rejected.length, 1);
  assert.equal(answer.rejected[0].index, 1);
  assert.equal(answer.rejected[0].problem.type, "/problems/event-rejected");
  assert.equal(await client.state({ path: "/pruned" }), 2);
});

test("an unknown event type rejects with a ReactorError carrying the problem", { timeout: 10_000 }, async () => {
  const error = await rejection(client.fire({ type: "explode", path: "/x" }));
  assert.ok(error instanceof ReactorError);
  assert.ok(error instanceof Error);
  assert.equal(error.name, "ReactorError");
  assert.equal(error.status, 422);
  assert.equal(error.type, "/problems/unknown-event-type");
  assert.equal(error.message, error.problem.detail);
  assert.ok(error.problem.knownTypes.includes("increment"), JSON.stringify(error.problem));
});

test("a malformed event rejects with invalid-event, a refused one with event-rejected", { timeout: 10_000 }, async () => {
  const invalid = await rejection(client.fire({ type: "set", path: "/x", valeu: 1 }));
  assert.equal(invalid.type, "/problems/invalid-event");
  assert.equal(invalid.status, 422);
  assert.match(invalid.message, /\S/);
  await client.fire({ type: "set", path: "/text", value: "not a number" });
  const refused = await rejection(client.fire({ type: "increment", path: "/text" }));
  assert.equal(refused.type, "/problems/event-rejected");
  const failedTest = await rejection(client.fire({ type: "patch", ops: [{ op: "test", path: "/text", value: "other" }] }));
  assert.equal(failedTest.type, "/problems/precondition-failed");
  assert.equal(failedTest.status, 409);
});

test("a retry with the same idempotency key is answered once", { timeout: 10_000 }, async () => {
  const key = `key-${process.pid}-${Date.now()}`;
  const event = { type: "increment", path: "/idempotent" };
  const first = await client.fire(event, { idempotencyKey: key });
  const again = await client.fire(event, { idempotencyKey: key });
  assert.equal(again, first);
  assert.equal(await client.state({ path: "/idempotent" }), 1);
  const reused = await rejection(client.fire({ type: "increment", path: "/idempotent", by: 5 }, { idempotencyKey: key }));
  assert.equal(reused.type, "/problems/idempotency-key-reused");
});

test("a non-problem error answer still rejects with a ReactorError", { timeout: 10_000 }, async () => {
  const fakeFetch = async () => new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" });
  const error = await rejection(new ReactorClient({ url: server.url, fetch: fakeFetch }).fire({ type: "set", path: "/x", value: 1 }));
  assert.ok(error instanceof ReactorError);
  assert.equal(error.status, 502);
  assert.equal(error.type, "about:blank");
});

test("with tokens: the Bearer token is sent, and a missing one rejects with unauthorized", { timeout: 15_000 }, async () => {
  const secured = await startServer("--token", "app:s3cret:read+fire", "--token", "reader:r3ad:read");
  try {
    const app = new ReactorClient({ url: secured.url, token: "s3cret" });
    assert.equal(await app.fire({ type: "set", path: "/secret", value: 42 }), 1);
    assert.deepEqual(await app.state(), { secret: 42 });
    const anonymous = await rejection(new ReactorClient({ url: secured.url }).state());
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.type, "/problems/unauthorized");
    const reader = await rejection(new ReactorClient({ url: secured.url, token: "r3ad" }).fire({ type: "set", path: "/x", value: 1 }));
    assert.equal(reader.status, 403);
    assert.equal(reader.type, "/problems/forbidden");
  } finally {
    assert.equal(await secured.stop(), 0);
  }
});

test("a call to a server that never answers rejects with a TimeoutError after the timeout", { timeout: 10_000 }, async (t) => {
  const silent = await startSilentServer();
  t.after(() => silent.close());
  const hanging = new ReactorClient({ url: silent.url, timeout: 200 });
  let started = Date.now();
  const fired = await rejection(hanging.fire({ type: "increment", path: "/n" }));
  assert.equal(fired.name, "TimeoutError");
  assert.match(fired.message, /within 200 ms; the request may or may not have been applied/);
  assert.ok(Date.now() - started < 2000, `the client's timeout: ${Date.now() - started} ms`);
  started = Date.now();
  const read = await rejection(hanging.state({ path: "/n", timeout: 100 }));
  assert.equal(read.name, "TimeoutError");
  assert.match(read.message, /within 100 ms$/, "a read changes nothing");
  assert.ok(Date.now() - started < 2000, `the call's own timeout: ${Date.now() - started} ms`);
  const batch = await rejection(hanging.fireBatch([{ type: "increment", path: "/n" }], { timeout: 50 }));
  assert.equal(batch.name, "TimeoutError");
  assert.ok(silent.accepted >= 3, "each call reached the server");
});

test("an AbortSignal cancels a call", { timeout: 10_000 }, async (t) => {
  const silent = await startSilentServer();
  t.after(() => silent.close());
  const hanging = new ReactorClient({ url: silent.url, timeout: Infinity });
  const controller = new AbortController();
  const pending = rejection(hanging.state({ signal: controller.signal }));
  setTimeout(() => controller.abort(), 100);
  assert.equal((await pending).name, "AbortError");
  const reason = new Error("the user left the page");
  const aborted = await rejection(hanging.fire({ type: "increment", path: "/n" }, { signal: AbortSignal.abort(reason) }));
  assert.equal(aborted, reason, "an aborted signal rejects with its reason, before anything is sent");
  // A signal that never aborts leaves a call to the live server alone.
  const version = await client.fire({ type: "set", path: "/signalled", value: true }, { signal: new AbortController().signal });
  assert.equal(await client.state({ path: "/signalled", signal: new AbortController().signal }), true);
  assert.equal((await serverState(server.url)).version, version);
});

test("a 503 carries the seconds of its Retry-After header as retryAfter", { timeout: 10_000 }, async () => {
  const full = await startServer("--max-connections", "1");
  const held = net.connect(full.port, "127.0.0.1");
  try {
    // Once the held connection has been answered, it is surely counted.
    await new Promise((resolve, reject) => {
      held.once("error", reject);
      held.once("data", resolve);
      held.write("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n");
    });
    const error = await rejection(new ReactorClient({ url: full.url }).fire({ type: "increment", path: "/n" }));
    assert.ok(error instanceof ReactorError);
    assert.equal(error.status, 503);
    assert.equal(error.type, "/problems/too-many-connections");
    assert.equal(error.problem.retryAfter, undefined, "this problem has no retryAfter member");
    assert.equal(error.retryAfter, 1);
  } finally {
    held.destroy();
    assert.equal(await full.stop(), 0);
  }
});

test("retryAfter is the problem's retryAfter when it has one, else the header's, a number or a date", async () => {
  const answer = (body, retryAfter) => async () => new Response(JSON.stringify(body), {
    status: body.status, headers: { "Content-Type": "application/problem+json", "Retry-After": retryAfter },
  });
  const limited = { type: "/problems/rate-limited", title: "Too many requests", status: 429, detail: "retry in 3 s", retryAfter: 3 };
  const fromBody = await rejection(new ReactorClient({ url: server.url, fetch: answer(limited, "5") }).fire({ type: "set", path: "/x", value: 1 }));
  assert.equal(fromBody.retryAfter, 3);
  const unavailable = { type: "/problems/journal-unavailable", title: "Journal unavailable", status: 503, detail: "the disk is full" };
  const fromHeader = await rejection(new ReactorClient({ url: server.url, fetch: answer(unavailable, "7") }).state());
  assert.equal(fromHeader.retryAfter, 7);
  const later = new Date(Date.now() + 60_000).toUTCString();
  const fromDate = await rejection(new ReactorClient({ url: server.url, fetch: answer(unavailable, later) }).state());
  assert.ok(fromDate.retryAfter > 50 && fromDate.retryAfter <= 61, `${fromDate.retryAfter} s`);
  const refused = await rejection(client.fire({ type: "explode" }));
  assert.equal(refused.retryAfter, undefined, "nothing to wait for: a refusal");
});

test("the base URL may end with a slash", () => {
  assert.equal(new ReactorClient({ url: "http://127.0.0.1:1/" }).url, "http://127.0.0.1:1");
  assert.equal(new ReactorClient().url, "http://127.0.0.1:7070");
});
