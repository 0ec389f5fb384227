// reactor-client.js: a dependency-free client for reactord (see docs/api.md and docs/protocol.md).
//
// Works in browsers and in any runtime with a global `fetch` and `WebSocket` (Node 22+, Deno, Bun;
// Node 20 with --experimental-websocket). One file, no build step, so it can be served as is.

/**
 * An answer from reactord that is an RFC 9457 problem (an HTTP error, or an `error` message over the
 * WebSocket). The problem's `type` is stable, so code should branch on `.type` rather than on the
 * message, which is the problem's human-readable `detail`.
 */
export class ReactorError extends Error {
  /**
   * @param {object} problem the RFC 9457 problem object as reactord sent it
   * @param {number} [status] the HTTP status, when the problem does not carry one
   */
  constructor(problem, status, retryAfter) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${status}`);
    this.name = "ReactorError";
    /** @type {object} the whole problem, with extension members such as `index` or `knownTypes` */
    this.problem = problem;
    /** @type {number|undefined} */
    this.status = problem?.status ?? status;
    /** @type {string|undefined} e.g. "/problems/event-rejected" */
    this.type = problem?.type;
    /**
     * @type {number|undefined} seconds to wait before asking again (429, 503): the problem's
     * `retryAfter` when it has one, else the answer's `Retry-After` header
     */
    this.retryAfter = typeof problem?.retryAfter === "number" && problem.retryAfter >= 0 ? problem.retryAfter : retryAfter;
  }
}

/** The seconds a `Retry-After` header asks for: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
function retryAfterSeconds(header) {
  if (header === null || header === undefined) return undefined;
  const text = String(header).trim();
  if (/^[0-9]+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** A JSON Patch that cannot be applied. The document it was applied to is left as it was. */
export class PatchError extends Error {
  constructor(message, index) {
    super(index === undefined ? message : `operation ${index}: ${message}`);
    this.name = "PatchError";
    /** @type {number|undefined} the index of the failing operation in the patch */
    this.index = index;
  }
}

// ---------------------------------------------------------------------------------------------
// RFC 6902 JSON Patch over RFC 6901 JSON Pointers.
//
// The applier is persistent: it never mutates its input and copies only the containers on the path
// of each operation, sharing everything else with the previous document. That keeps a patch cheap
// on a large state, makes a failing patch atomic for free (the old document is untouched), and lets
// UI code compare states by reference (`prev !== next` means something changed).

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/** Splits a JSON Pointer into its unescaped reference tokens ("~1" is "/", then "~0" is "~"). */
export function parsePointer(pointer) {
  if (pointer === "") return [];
  if (typeof pointer !== "string" || pointer[0] !== "/") throw new PatchError(`invalid JSON Pointer ${JSON.stringify(pointer)}`);
  return pointer.slice(1).split("/").map((token) => {
    if (/~[^01]|~$/.test(token)) throw new PatchError(`invalid escape in JSON Pointer ${JSON.stringify(pointer)}`);
    return token.replace(/~1/g, "/").replace(/~0/g, "~");
  });
}

// An array index per RFC 6901: "0" or digits without a leading zero. `-` (past the end) is
// accepted only where `allowEnd` says so, i.e. as the target of an `add`.
function arrayIndex(array, token, { allowEnd = false } = {}) {
  if (allowEnd && token === "-") return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`"${token}" is not an array index`);
  const index = Number(token);
  if (index > array.length || (index === array.length && !allowEnd)) throw new PatchError(`index ${index} is out of bounds`);
  return index;
}

// Members are defined rather than assigned so that a key such as "__proto__" stays an ordinary
// member, as it is in JSON, instead of changing the object's prototype.
function defineMember(object, key, value) {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The value at `tokens`, or throws when there is none. */
function valueAt(document, tokens) {
  let value = document;
  for (const token of tokens) {
    if (Array.isArray(value)) value = value[arrayIndex(value, token)];
    else if (isObject(value) && hasOwn(value, token)) value = value[token];
    else throw new PatchError(`no value at /${tokens.join("/")}`);
  }
  return value;
}

// Returns a copy of `document` in which the container that holds the last token was copied and
// handed to `change(container, lastToken)`. Every container on the way is copied; nothing is mutated.
function changeParent(document, tokens, change) {
  const copy = Array.isArray(document) ? document.slice() : isObject(document) ? { ...document } : null;
  if (copy === null) throw new PatchError(`no container at the parent of /${tokens.join("/")}`);
  const [token, ...rest] = tokens;
  if (rest.length === 0) {
    change(copy, token);
    return copy;
  }
  if (Array.isArray(copy)) {
    const index = arrayIndex(copy, token);
    copy[index] = changeParent(copy[index], rest, change);
  } else {
    if (!hasOwn(copy, token)) throw new PatchError(`no value at /${token} on the way to /${tokens.join("/")}`);
    defineMember(copy, token, changeParent(copy[token], rest, change));
  }
  return copy;
}

function add(document, tokens, value) {
  if (tokens.length === 0) return value;
  return changeParent(document, tokens, (parent, token) => {
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, token, { allowEnd: true }), 0, value);
    else defineMember(parent, token, value);
  });
}

function remove(document, tokens) {
  // Removing the whole document leaves nothing; `null` is what reactord shows for "nothing there".
  if (tokens.length === 0) return null;
  return changeParent(document, tokens, (parent, token) => {
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, token), 1);
    else if (hasOwn(parent, token)) delete parent[token];
    else throw new PatchError(`no value at /${tokens.join("/")} to remove`);
  });
}

function replace(document, tokens, value) {
  if (tokens.length === 0) return value;
  return changeParent(document, tokens, (parent, token) => {
    if (Array.isArray(parent)) parent[arrayIndex(parent, token)] = value;
    else if (hasOwn(parent, token)) defineMember(parent, token, value);
    else throw new PatchError(`no value at /${tokens.join("/")} to replace`);
  });
}

/** JSON equality: objects regardless of member order, arrays in order, numbers by value. */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

function applyOperation(document, operation) {
  if (!isObject(operation)) throw new PatchError("an operation must be an object");
  const { op } = operation;
  const path = parsePointer(operation.path);
  const needValue = () => {
    if (!hasOwn(operation, "value")) throw new PatchError(`"${op}" needs a "value"`);
    return operation.value;
  };
  switch (op) {
    case "add": return add(document, path, needValue());
    case "remove": return remove(document, path);
    case "replace": return replace(document, path, needValue());
    case "test":
      if (!jsonEqual(valueAt(document, path), needValue())) throw new PatchError(`test failed at ${operation.path}`);
      return document;
    case "move": case "copy": {
      const from = parsePointer(operation.from);
      const value = valueAt(document, from);
      if (op === "copy") return add(document, path, value); // sharing is safe: nothing is ever mutated
      if (from.length < path.length && from.every((token, i) => token === path[i])) {
        throw new PatchError(`cannot move ${operation.from} into its own child ${operation.path}`);
      }
      return add(remove(document, from), path, value);
    }
    default: throw new PatchError(`unknown op ${JSON.stringify(op)}`);
  }
}

/**
 * Applies an RFC 6902 JSON Patch and returns the new document. All or nothing: on any failure it
 * throws a {@link PatchError} and `document` is unchanged (it is never mutated).
 * @param {any} document
 * @param {object[]} operations
 */
export function applyPatch(document, operations) {
  if (!Array.isArray(operations)) throw new PatchError("a JSON Patch must be an array");
  return operations.reduce((current, operation, index) => {
    try {
      return applyOperation(current, operation);
    } catch (error) {
      throw error instanceof PatchError && error.index === undefined ? new PatchError(error.message, index) : error;
    }
  }, document);
}

// ---------------------------------------------------------------------------------------------
// The client.

function defaultURL() {
  // A page served by reactord (or by a proxy in front of it) talks to where it came from.
  const location = globalThis.location;
  return location && /^https?:$/.test(location.protocol) ? location.origin : "http://127.0.0.1:7070";
}

/**
 * A connection to one reactord. Holds no socket itself: every `subscribe` opens its own WebSocket,
 * and `fire`/`fireBatch`/`state` are single HTTP requests.
 *
 * Every HTTP call takes `{signal, timeout}` besides its own options: an AbortSignal that cancels it
 * (it then rejects with the signal's reason, an `AbortError` by default), and the milliseconds it may
 * take, the client's `timeout` by default. A call that runs out of time rejects with a DOMException
 * named `TimeoutError`; a `fire` may or may not have been applied then.
 */
export class ReactorClient {
  /**
   * @param {object} [options]
   * @param {string} [options.url] the server's base URL; by default the page's origin, else http://127.0.0.1:7070
   * @param {string} [options.token] a bearer token, when the server has tokens configured
   * @param {number} [options.timeout] milliseconds an HTTP call or a subscription's `fire` waits for its
   *   answer, and a subscription for its handshake or a liveness probe's answer (10000; `Infinity` for no limit)
   * @param {typeof WebSocket} [options.WebSocket] a WebSocket implementation, for runtimes without a global one
   * @param {typeof fetch} [options.fetch] a fetch implementation, likewise
   */
  constructor({ url = defaultURL(), token, timeout = 10_000, WebSocket: webSocket = globalThis.WebSocket, fetch: fetcher = globalThis.fetch } = {}) {
    this.url = String(url).replace(/\/+$/, "");
    this.token = token;
    this.timeout = timeout;
    this.WebSocket = webSocket;
    // Bound so that a browser's fetch is not called with the client as `this` (an "Illegal invocation").
    this.fetch = fetcher && ((...args) => fetcher(...args));
  }

  /**
   * Fires one event with POST /events.
   * @param {object} event e.g. `{type: "increment", path: "/counter"}`
   * @param {{idempotencyKey?: string, signal?: AbortSignal, timeout?: number}} [options] a key makes a
   *   retry of the same request safe: the server answers it with the first answer instead of applying
   *   the event twice
   * @returns {Promise<number>} the version at which the event was applied
   */
  async fire(event, { idempotencyKey, signal, timeout } = {}) {
    return (await this.#post("/events", event, { idempotencyKey, signal, timeout })).version;
  }

  /**
   * Fires several events at once, each at its own version, nothing else in between.
   * @param {object[]} events
   * @param {{mode?: "all" | "prune", idempotencyKey?: string, signal?: AbortSignal, timeout?: number}} [options]
   *   `all` (the default) applies all or none and rejects with the failing event's problem (its
   *   `index`); `prune` applies the accepted ones and lists the rest in `rejected`
   * @returns {Promise<{version: number, applied: number, rejected?: {index: number, problem: object}[]}>}
   */
  async fireBatch(events, { mode, idempotencyKey, signal, timeout } = {}) {
    const query = mode && mode !== "all" ? `?mode=${encodeURIComponent(mode)}` : "";
    return this.#post(`/events${query}`, events, { idempotencyKey, signal, timeout });
  }

  /**
   * Reads the state (GET /state), or the sub-tree at `path`, which rejects with a
   * `/problems/path-not-found` ReactorError when there is nothing there.
   * @param {{path?: string, signal?: AbortSignal, timeout?: number}} [options]
   */
  async state({ path, signal, timeout } = {}) {
    const query = path ? `?path=${encodeURIComponent(path)}` : "";
    return this.#request("GET", `/state${query}`, { signal, timeout });
  }

  /**
   * Follows the state live over a WebSocket: a snapshot, then a patch per change, applied here.
   * Reconnects by itself until `close()`.
   * @param {object} [options]
   * @param {string} [options.path] a JSON Pointer: follow only that sub-tree (`null` while it does not exist)
   * @param {"patch" | "state"} [options.mode] `state` has the server send whole values instead of patches
   * @param {(state: any, version: number) => void} [options.onState] after the snapshot and each change
   * @param {(status: SubscriptionStatus) => void} [options.onStatus] on every change of `status`
   * @param {{initial?: number, max?: number}} [options.backoff] reconnection delays in milliseconds
   * @param {number} [options.probeAfterSilence] milliseconds without a message after which the
   *   subscription checks that the connection still carries anything (20000; `Infinity` never does)
   * @returns {Subscription}
   */
  subscribe({ path, mode = "patch", onState, onStatus, backoff, probeAfterSilence = 20_000 } = {}) {
    if (!this.WebSocket) throw new TypeError("no WebSocket implementation: pass one as the WebSocket option");
    return new Subscription(this, { path, mode, onState, onStatus, backoff, probeAfterSilence });
  }

  /**
   * The WebSocket URL of a subscription; the token goes in the query since a browser cannot set headers on it.
   * `history` is the one `since` belongs to (a snapshot's `history`).
   */
  subscribeURL({ path, mode, since, history } = {}) {
    const url = new URL(`${this.url}/subscribe`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (path) url.searchParams.set("path", path);
    if (mode && mode !== "patch") url.searchParams.set("mode", mode);
    if (since !== undefined) url.searchParams.set("since", String(since));
    if (since !== undefined && history !== undefined) url.searchParams.set("history", history);
    if (this.token) url.searchParams.set("access_token", this.token);
    return url.toString();
  }

  #post(target, body, { idempotencyKey, signal, timeout }) {
    const headers = { "Content-Type": "application/json" };
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    return this.#request("POST", target, { headers, body: JSON.stringify(body), signal, timeout });
  }

  // Network failures reject with fetch's own TypeError: there is no problem to report, and whether a
  // POST was applied is unknown (which is what idempotency keys are for).
  async #request(method, target, { headers = {}, body, signal, timeout = this.timeout } = {}) {
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    // One controller aborts the request for the caller's signal or for the timeout, whichever comes
    // first; linked by hand rather than with AbortSignal.any and AbortSignal.timeout, which older
    // browsers lack, and so that the timer is cleared once the answer is in.
    const controller = new AbortController();
    const abort = () => controller.abort(signal.reason);
    if (signal?.aborted) abort();
    else signal?.addEventListener("abort", abort);
    const timer = Number.isFinite(timeout) ? setTimeout(() => {
      const maybe = method === "GET" ? "" : "; the request may or may not have been applied";
      controller.abort(new DOMException(`no answer from reactord within ${timeout} ms${maybe}`, "TimeoutError"));
    }, timeout) : undefined;
    let response, text;
    try {
      response = await this.fetch(`${this.url}${target}`, { method, headers, body, signal: controller.signal });
      text = await response.text();
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", abort);
    }
    let json;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (response.ok) return json;
    // Every reactord error is a problem; anything else (a proxy's HTML page) gets a minimal one.
    const problem = json?.type ? json : { type: "about:blank", title: response.statusText, status: response.status, detail: text || response.statusText || `HTTP ${response.status}` };
    throw new ReactorError(problem, response.status, retryAfterSeconds(response.headers.get("Retry-After")));
  }
}

/** @typedef {"connecting" | "open" | "reconnecting" | "closed"} SubscriptionStatus */

// The close code reactord sends when a client message is larger than its --max-message-bytes: it
// closes without reading the message (docs/protocol.md), so the event in it was not applied.
const MESSAGE_TOO_BIG = 1009;
// The code a WebSocket reports for a connection that ended without a close frame (RFC 6455 §7.1.5),
// used here too for a connection this client gave up on because it went silent.
const ABNORMAL_CLOSURE = 1006;

const utf8 = new TextEncoder();

/**
 * One live subscription, made by {@link ReactorClient#subscribe}. It keeps `state` and `version`
 * equal to the server's (for the selection) as of the last message, and survives dropped
 * connections: it reconnects with `since=<version>`, so the server sends only what was missed.
 *
 * It also notices a connection that went silent without closing (a network that stopped delivering
 * says nothing to a browser): see {@link Subscription#lastClose}.
 */
export class Subscription {
  // #history: the history #version belongs to, as the last snapshot named it: sent back with
  // `since`, so that a server that started over (no data directory) sends a snapshot, not its patches.
  #client; #options; #socket = null; #status; #state; #version; #history; #lastClose;
  #attempt = 0; #timer = null; #nextId = 1; #pending = new Map();
  #livenessTimer = null; #heardAt = 0; #probedAt = -Infinity; #nextProbe = 1;

  constructor(client, options) {
    this.#client = client;
    this.#options = options;
    this.#setStatus("connecting");
    this.#connect();
  }

  /** @returns {SubscriptionStatus} */
  get status() { return this.#status; }
  /** The local copy of the (selected) state; `undefined` until the first snapshot. Never mutated in place. */
  get state() { return this.#state; }
  /** The version `state` is at; `undefined` until the first snapshot. */
  get version() { return this.#version; }
  /**
   * How the last connection ended, `{code, reason}`; `undefined` while none has. The code is the
   * server's close code (1001 when it shuts down, 1009 for a message too large, 4008 for a slow
   * consumer: see docs/protocol.md); 1006 when the connection ended without one: cut, or given up on
   * by this client for a handshake or a liveness probe that went unanswered; 1000 when this client
   * closed it (`close()`, or a message it could not use). The reason says which.
   * @returns {{code: number, reason: string} | undefined}
   */
  get lastClose() { return this.#lastClose; }

  /**
   * Fires an event over this subscription's WebSocket. Its own patch arrives (and `onState` runs)
   * before the promise resolves, so the caller sees its change in `state` at once.
   * @param {object} event
   * @param {{timeout?: number}} [options] milliseconds to wait for the answer (the client's `timeout`)
   * @returns {Promise<number>} the version, or rejects with a ReactorError carrying the problem (a
   *   `/problems/body-too-large` one, status 413, when reactord refused the message as too large
   *   and closed with 1009: the event was not applied); with a DOMException named `TimeoutError`
   *   when no answer came in time; with a plain Error when not connected or when the connection drops
   *   before the answer (its `closeCode` says how). After a timeout or a drop the event may or may
   *   not have been applied: nothing is resent automatically, to never apply it twice.
   */
  fire(event, { timeout = this.#client.timeout } = {}) {
    const socket = this.#socket;
    if (!socket || socket.readyState !== 1) return Promise.reject(new Error(`cannot fire: the subscription is ${this.#status}`));
    const id = this.#nextId++;
    const message = JSON.stringify({ type: "fire", id, event });
    return new Promise((resolve, reject) => {
      const timer = Number.isFinite(timeout) ? setTimeout(() => {
        this.#pending.delete(id);
        reject(new DOMException(`no answer from reactord within ${timeout} ms; the event may or may not have been applied`, "TimeoutError"));
      }, timeout) : undefined;
      // The size is what reactord measures against its --max-message-bytes (see #failPending).
      this.#pending.set(id, {
        resolve: (version) => { clearTimeout(timer); resolve(version); },
        reject: (error) => { clearTimeout(timer); reject(error); },
        bytes: utf8.encode(message).length,
      });
      socket.send(message);
    });
  }

  /** Stops following: closes the socket, stops reconnecting and rejects the fires still unanswered. */
  close() {
    if (this.#status === "closed") return;
    clearTimeout(this.#timer);
    this.#detach(1000, { code: 1000, reason: "closed by the client" });
    this.#setStatus("closed");
  }

  #connect() {
    const { path, mode } = this.#options;
    const url = this.#client.subscribeURL({ path, mode, since: this.#version, history: this.#history });
    const socket = new this.#client.WebSocket(url, ["reactor.v1"]);
    this.#socket = socket;
    this.#watch(socket, this.#client.timeout); // a handshake that never ends is given up on
    // Every handler checks that its socket is still the current one: a socket we gave up on may
    // still report events afterwards.
    socket.onopen = () => {
      if (socket !== this.#socket) return;
      this.#attempt = 0;
      this.#heardAt = performance.now();
      this.#watch(socket, this.#options.probeAfterSilence);
      this.#setStatus("open");
    };
    socket.onmessage = (event) => {
      if (socket !== this.#socket) return;
      this.#heardAt = performance.now();
      this.#receive(event.data);
    };
    // Browsers follow an error with a close, but some implementations (Node 20's) report a failed
    // handshake with an error alone; either one means the socket is gone. The other is then ignored,
    // since #reconnect forgets this socket.
    socket.onerror = () => {
      if (socket === this.#socket) this.#reconnect({ code: ABNORMAL_CLOSURE, reason: "" });
    };
    socket.onclose = (event) => {
      if (socket === this.#socket) this.#reconnect({ code: event?.code ?? ABNORMAL_CLOSURE, reason: event?.reason ?? "" });
    };
  }

  // Checks on `socket` in `delay` ms (never, when the delay is not a finite number).
  #watch(socket, delay) {
    clearTimeout(this.#livenessTimer);
    if (Number.isFinite(delay)) this.#livenessTimer = setTimeout(() => this.#checkLiveness(socket), Math.max(0, delay));
  }

  // Liveness. A connection can go silent without closing (a network that stops delivering), and a
  // browser sees neither WebSocket pings nor pongs, while reactord sends nothing else on an idle
  // connection. So after `probeAfterSilence` without a message the subscription sends a `ping`,
  // which reactord answers at once with a `pong`, whatever the token (docs/protocol.md; a server
  // older than `ping` answers it with an `error`). Any message counts as the answer; none within
  // the client's timeout means the connection is dead, and it reconnects.
  #checkLiveness(socket) {
    if (socket !== this.#socket) return;
    const timeout = this.#client.timeout;
    if (socket.readyState !== 1) {
      return this.#reconnect({ code: ABNORMAL_CLOSURE, reason: `no WebSocket handshake within ${timeout} ms` });
    }
    const now = performance.now();
    if (this.#probedAt > this.#heardAt) {
      if (now - this.#probedAt >= timeout) {
        return this.#reconnect({ code: ABNORMAL_CLOSURE, reason: `no answer to a liveness probe within ${timeout} ms` });
      }
      return this.#watch(socket, this.#probedAt + timeout - now);
    }
    const { probeAfterSilence } = this.#options;
    const silence = now - this.#heardAt;
    if (silence < probeAfterSilence) return this.#watch(socket, probeAfterSilence - silence);
    this.#probedAt = now;
    socket.send(JSON.stringify({ type: "ping", id: `ping-${this.#nextProbe++}` }));
    this.#watch(socket, timeout);
  }

  #receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return this.#reconnect({ code: 1000, reason: "a message that is not JSON" });
    }
    switch (message.type) {
      case "snapshot":
        // Always taken, even at an older version: the server sends one when it could not resume us
        // (e.g. it restarted) or after we fell behind, and it replaces whatever we hold.
        this.#history = typeof message.history === "string" ? message.history : undefined;
        return this.#update(message.state, message.version);
      case "state":
        if (this.#version === undefined || message.version > this.#version) this.#update(message.state, message.version);
        return;
      case "patch": {
        if (this.#version !== undefined && message.version <= this.#version) return;
        let next;
        try {
          if (this.#version === undefined) throw new PatchError("a patch before any snapshot");
          next = applyPatch(this.#state, message.ops);
        } catch {
          // Our copy no longer matches the server's. Resuming would resend the same patch, so ask for
          // a fresh snapshot instead.
          this.#version = undefined;
          return this.#reconnect({ code: 1000, reason: "a patch that does not apply, so a fresh snapshot is needed" });
        }
        return this.#update(next, message.version);
      }
      case "pong": // the answer to a liveness probe: hearing it was all it was for
        return;
      case "ack":
      case "error": {
        const pending = this.#pending.get(message.id);
        if (!pending) return; // e.g. an older server's answer to a ping, or about a message that was not ours (id null)
        this.#pending.delete(message.id);
        if (message.type === "ack") pending.resolve(message.version);
        else pending.reject(new ReactorError(message.problem));
        return;
      }
      default: // unknown message types are for newer clients; ignore them
    }
  }

  #update(state, version) {
    this.#state = state;
    this.#version = version;
    this.#options.onState?.(state, version);
  }

  // Closes the current socket (if any) for good, with `code`, and fails the fires waiting on it;
  // `ended` is how the connection ended, `{code, reason}`.
  #detach(code, ended) {
    const socket = this.#socket;
    this.#socket = null;
    clearTimeout(this.#livenessTimer);
    this.#probedAt = -Infinity;
    if (socket) this.#lastClose = ended;
    if (socket && socket.readyState <= 1) {
      try { socket.close(code); } catch { /* already closing */ }
    }
    this.#failPending(ended);
  }

  // reactord reads a connection's messages in order and closes with 1009 at the first one larger than
  // its --max-message-bytes, unread, reading nothing after it. Every fire sent before that one was
  // smaller, so the largest fire still waiting is the refused one or came after it: either way it was
  // certainly not applied, and fails as the 413 POST /events would give. The others may or may not
  // have been applied.
  #failPending(ended) {
    let refused;
    if (ended.code === MESSAGE_TOO_BIG) {
      for (const pending of this.#pending.values()) if (!refused || pending.bytes > refused.bytes) refused = pending;
    }
    const how = ended.reason ? `${ended.code}: ${ended.reason}` : `${ended.code}`;
    for (const pending of this.#pending.values()) {
      if (pending === refused) {
        pending.reject(new ReactorError({
          type: "/problems/body-too-large", title: "Body too large", status: 413,
          detail: `reactord refused the message unread: it is larger than its --max-message-bytes (WebSocket close ${how}); the event was not applied`,
        }));
        continue;
      }
      const error = new Error(`the connection closed (${how}) before the server answered; the event may or may not have been applied`);
      error.closeCode = ended.code;
      error.closeReason = ended.reason;
      pending.reject(error);
    }
    this.#pending.clear();
  }

  // Exponential backoff, capped, with jitter so that many clients dropped at once by a restart do
  // not all come back in the same instant. The first retry is quick: most drops are one-offs.
  #reconnect(ended) {
    if (this.#status === "closed") return;
    this.#detach(1000, ended);
    this.#setStatus("reconnecting");
    const { initial = 250, max = 10_000 } = this.#options.backoff ?? {};
    const ceiling = Math.min(max, initial * 2 ** this.#attempt++);
    const delay = ceiling / 2 + Math.random() * ceiling / 2;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#connect(), delay);
  }

  #setStatus(status) {
    if (status === this.#status) return;
    this.#status = status;
    this.#options.onStatus?.(status);
  }
}
