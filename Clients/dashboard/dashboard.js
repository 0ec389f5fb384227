// The Reactor dashboard: a live view of one reactord's state, its events, and its past.
//
// Plain ES module, no build step, no dependency but reactor-client.js, which reactord serves beside
// this file (/assets/). The page talks to the origin it was loaded from; `?server=http://host:port`
// points it at another reactord (which must then allow this page's origin with --cors-origin).
//
// What it uses of the API (docs/api.md, docs/protocol.md):
//   GET /subscribe (WebSocket, via ReactorClient.subscribe): the live state, with ?path= for a sub-tree
//   POST /events: the "Fire an event" form
//   GET /history?since=N&limit=M (NDJSON): the event log; its Reactor-Oldest-Version header bounds time travel
//   GET /state?version=N[&path=P]: the state at a past version
//   HEAD /state: whether a token is needed (a browser cannot see why a WebSocket handshake failed)

import { ReactorClient, ReactorError, parsePointer } from "./reactor-client.js";

// ---------------------------------------------------------------------------------------------
// Settings

const LOG_CAP = 200;          // event log entries kept on screen
const LOG_INITIAL = 50;       // entries loaded when the page opens
const RATE_WINDOW_MS = 5000;  // events per second: over this sliding window
const SPARK_POINTS = 120;     // the sparkline: one point per tick, two ticks a second, one minute
const CHILD_LIMIT = 300;      // children of one object/array shown before a "show more" button
const PATH_POLL_MS = 1000;    // with a sub-tree selected, how often to look for events elsewhere

const query = new URLSearchParams(location.search);

function serverBase() {
  const given = query.get("server");
  if (given) {
    try {
      const url = new URL(given);
      if (url.protocol === "http:" || url.protocol === "https:") return url.origin + url.pathname.replace(/\/+$/, "");
    } catch { /* fall through */ }
    console.warn(`ignoring ?server=${given}: not an http(s) URL`);
  }
  return /^https?:$/.test(location.protocol) ? location.origin : "http://127.0.0.1:7070";
}

const BASE = serverBase();
const TOKEN_KEY = `reactor-dashboard.token ${BASE}`;
const THEME_KEY = "reactor-dashboard.theme";

// ---------------------------------------------------------------------------------------------
// DOM helpers

const $ = (id) => document.getElementById(id);

function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") element.className = value;
    else if (name === "text") element.textContent = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) element.append(child);
  return element;
}

const ui = {
  server: $("server"),
  status: $("status"),
  statusLabel: $("status-label"),
  version: $("version"),
  rate: $("rate"),
  sparkLine: $("spark-line"),
  sparkArea: $("spark-area"),
  tokenButton: $("token-button"),
  tokenButtonLabel: $("token-button-label"),
  themeButton: $("theme-button"),
  pathForm: $("path-form"),
  pathInput: $("path-input"),
  pathClear: $("path-clear"),
  pathError: $("path-error"),
  crumbs: $("crumbs"),
  expandAll: $("expand-all"),
  collapseAll: $("collapse-all"),
  scrubber: $("scrubber"),
  scrub: $("scrub"),
  scrubVersion: $("scrub-version"),
  scrubBack: $("scrub-back"),
  scrubForward: $("scrub-forward"),
  scrubLive: $("scrub-live"),
  scrubMin: $("scrub-min"),
  scrubMax: $("scrub-max"),
  historyNote: $("history-note"),
  pastBanner: $("past-banner"),
  pastLabel: $("past-label"),
  liveButton: $("live-button"),
  tree: $("tree"),
  examples: $("examples"),
  fireForm: $("fire-form"),
  editor: $("editor"),
  validation: $("validation"),
  fireButton: $("fire-button"),
  fireResult: $("fire-result"),
  errorBox: $("error-box"),
  errorStatus: $("error-status"),
  errorTitle: $("error-title"),
  errorDetail: $("error-detail"),
  errorExtra: $("error-extra"),
  errorClose: $("error-close"),
  log: $("event-log"),
  logNote: $("log-note"),
  logEmpty: $("log-empty"),
  logCount: $("log-count"),
  tokenDialog: $("token-dialog"),
  tokenForm: $("token-form"),
  tokenReason: $("token-reason"),
  tokenInput: $("token-input"),
  tokenForget: $("token-forget"),
  tokenCancel: $("token-cancel"),
};

// ---------------------------------------------------------------------------------------------
// The dashboard's state

const S = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  client: null,
  subscription: null,
  status: "connecting",
  path: "",                                   // the selected sub-tree ("" is the whole state)
  version: null,                              // the newest version seen anywhere (subscription, history, fire)
  live: { state: undefined, version: null, path: "" },
  past: null,                                 // {version, path, state, missing, error, loading} while time travelling
  log: [],                                    // newest first: {version, event} or {gap: count}
  logLast: null,                              // the newest version in the log (history fetched up to it)
  history: "unknown",                         // "unknown", "yes", or "no" (the server has no GET /history)
  oldest: null,                               // Reactor-Oldest-Version: the oldest version time travel can show
  samples: [],                                // [time, version] for events per second
  rates: new Array(SPARK_POINTS).fill(0),     // the sparkline's points
  collapsed: new Map(),                       // pointer -> true/false, where the user chose
  defaultCollapse: "auto",                    // "auto", "expanded" (expand all) or "collapsed" (collapse all)
  limits: new Map(),                          // pointer -> children shown, where the user asked for more
  dirty: null,                                // a pointer whose node must be rebuilt (toggled, or more shown)
  renderedRoot: null,                         // the tree's root element, reused where the state did not change
  renderedKey: null,                          // which view it shows (same key: changes are highlighted)
};
window.reactorDashboard = S; // for the curious, in the console

// ---------------------------------------------------------------------------------------------
// HTTP

function api(method, target) {
  const headers = {};
  if (S.token) headers.Authorization = `Bearer ${S.token}`;
  return fetch(`${BASE}${target}`, { method, headers, cache: "no-store" });
}

async function problemOf(response) {
  const text = await response.text().catch(() => "");
  try {
    const json = JSON.parse(text);
    if (json && typeof json === "object" && (json.type || json.title)) return json;
  } catch { /* not JSON */ }
  return { title: response.statusText || `HTTP ${response.status}`, status: response.status, detail: text || undefined };
}

function makeClient() {
  S.client = new ReactorClient({ url: BASE, token: S.token || undefined });
}

// ---------------------------------------------------------------------------------------------
// Connection and authentication

const STATUS_LABELS = {
  connecting: "connecting…",
  open: "connected",
  reconnecting: "reconnecting…",
  closed: "disconnected",
  unauthorized: "token needed",
  forbidden: "no read access",
};

function setStatus(status) {
  S.status = status;
  ui.status.dataset.status = status;
  ui.statusLabel.textContent = STATUS_LABELS[status] ?? status;
  updateScrubber();
}

/** Asks HEAD /state whether we may read; a browser cannot tell why a WebSocket handshake failed. */
async function probeAccess() {
  try {
    const response = await api("HEAD", "/state");
    if (response.status === 401) return "unauthorized";
    if (response.status === 403) return "forbidden";
    return "ok";
  } catch {
    return "unreachable";
  }
}

let lastProbe = 0;
async function onSubscriptionStatus(status) {
  if (status === "closed") return; // only ever our own doing
  setStatus(status);
  if (status === "reconnecting" && Date.now() - lastProbe > 2000) {
    lastProbe = Date.now();
    const access = await probeAccess();
    if (access === "unauthorized" || access === "forbidden") denied(access);
  }
}

function denied(kind) {
  S.subscription?.close();
  S.subscription = null;
  setStatus(kind);
  if (kind === "unauthorized") {
    openTokenDialog(S.token
      ? "The server refused this token (401 Unauthorized). Enter another one."
      : "This server needs an access token (it answered 401 Unauthorized). Enter one to connect.", true);
  } else {
    openTokenDialog("This token may not read the state (403 Forbidden): it needs the read scope.", true);
  }
  renderTree();
}

async function connect() {
  S.subscription?.close();
  S.subscription = null;
  setStatus("connecting");
  const access = await probeAccess();
  if (access === "unauthorized" || access === "forbidden") return denied(access);
  subscribe();
}

function subscribe() {
  S.subscription?.close();
  const path = S.path;
  S.live = { state: undefined, version: null, path };
  // The client reports "connecting" from inside subscribe(), before it returns: those early calls
  // see `subscription` still null and are ignored (the status is already "connecting").
  let subscription = null;
  subscription = S.client.subscribe({
    path: path || undefined,
    onStatus: (status) => { if (S.subscription === subscription) onSubscriptionStatus(status); },
    onState: (state, version) => { if (S.subscription === subscription) onLiveState(state, version, path); },
  });
  S.subscription = subscription;
  if (subscription.status === "open") setStatus("open");
}

function onLiveState(state, version, path) {
  // Versions never go back on one server, so a snapshot older than what this subscription had
  // means the server restarted. (S.version itself may run ahead of the subscription: the log and
  // the form's answers learn of versions first, so it only counts for a first snapshot.)
  const previous = S.live.version;
  if (previous !== null ? version < previous : S.version !== null && version < S.version) serverRestarted(version);
  S.live = { state, version, path };
  noteVersion(version);
  if (!S.past) scheduleRender(true);
  syncLog();
}

// A snapshot older than what we saw: the server restarted (versions start again at 0).
function serverRestarted(version) {
  S.version = version;
  S.samples = [[performance.now(), version]];
  S.log = [];
  S.logLast = null;
  S.oldest = null;
  ui.log.replaceChildren();
  if (S.past) goLive();
  updateVersion();
}

// ---------------------------------------------------------------------------------------------
// Version and events per second

function noteVersion(version) {
  if (typeof version !== "number") return;
  if (S.version !== null && version <= S.version) return;
  S.version = version;
  S.samples.push([performance.now(), version]);
  updateVersion();
}

function updateVersion() {
  ui.version.textContent = S.version === null ? "–" : String(S.version);
  document.title = S.version === null ? "Reactor dashboard" : `v${S.version} · Reactor dashboard`;
  updateScrubber();
}

function currentRate() {
  const now = performance.now();
  // Keep one sample at or before the window's start as the baseline.
  while (S.samples.length > 1 && S.samples[1][0] <= now - RATE_WINDOW_MS) S.samples.shift();
  if (S.samples.length === 0 || S.version === null) return 0;
  const [since, base] = S.samples[0];
  const seconds = Math.max(1000, Math.min(RATE_WINDOW_MS, now - since)) / 1000;
  return Math.max(0, S.version - base) / seconds;
}

function tickRate() {
  const rate = currentRate();
  ui.rate.textContent = rate === 0 ? "0" : rate < 10 ? rate.toFixed(1) : String(Math.round(rate));
  S.rates.push(rate);
  if (S.rates.length > SPARK_POINTS) S.rates.shift();
  const max = Math.max(1, ...S.rates);
  const step = 120 / (SPARK_POINTS - 1);
  const offset = SPARK_POINTS - S.rates.length;
  const points = S.rates.map((value, i) => `${((offset + i) * step).toFixed(1)},${(26 - (value / max) * 23).toFixed(1)}`);
  ui.sparkLine.setAttribute("d", points.length ? `M${points.join("L")}` : "");
  ui.sparkArea.setAttribute("d", points.length ? `M${(offset * step).toFixed(1)},28L${points.join("L")}L120,28Z` : "");
}

// ---------------------------------------------------------------------------------------------
// The JSON tree

const kindOf = (value) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);
const isContainer = (kind) => kind === "object" || kind === "array";
const escapeToken = (token) => token.replace(/~/g, "~0").replace(/\//g, "~1");
const lastToken = (pointer) => {
  const tokens = parsePointer(pointer);
  return tokens.length ? tokens[tokens.length - 1] : null;
};

function keyLabel(key) {
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key);
}

function preview(value, budget = 70) {
  let text;
  if (Array.isArray(value)) {
    const parts = [];
    for (const item of value) {
      parts.push(isContainer(kindOf(item)) ? (Array.isArray(item) ? "[…]" : "{…}") : JSON.stringify(item));
      if (parts.join(", ").length > budget) break;
    }
    text = `[${parts.join(", ")}${parts.length < value.length ? ", …" : ""}]`;
  } else {
    const parts = [];
    const keys = Object.keys(value);
    for (const key of keys) {
      const item = value[key];
      parts.push(`${keyLabel(key)}: ${isContainer(kindOf(item)) ? (Array.isArray(item) ? "[…]" : "{…}") : JSON.stringify(item)}`);
      if (parts.join(", ").length > budget) break;
    }
    text = `{${parts.join(", ")}${parts.length < keys.length ? ", …" : ""}}`;
  }
  return text.length > budget + 10 ? `${text.slice(0, budget)}…` : text;
}

function isCollapsed(pointer, depth, size) {
  if (S.collapsed.has(pointer)) return S.collapsed.get(pointer);
  if (depth === 0) return false;
  if (S.defaultCollapse === "expanded") return false;
  if (S.defaultCollapse === "collapsed") return true;
  return depth >= 4 || size > 100;
}

// An ancestor of (or the same node as) the one the user just toggled: rebuilt, never reused.
function isDirty(pointer) {
  const dirty = S.dirty;
  return dirty !== null && (dirty === pointer || dirty.startsWith(`${pointer}/`));
}

/**
 * Builds the element for `value` at `pointer`. `old` is the element that showed this pointer
 * before: when the value is the same object (reactor-client.js never mutates a state and shares
 * unchanged parts), it is reused as it is. Changed leaves, and containers that appeared, flash.
 */
function renderNode(key, value, pointer, depth, old, context, parentExisted, inArray = false) {
  if (old && old._value === value && !context.force && !isDirty(pointer)) return old;
  const kind = kindOf(value);
  const container = isContainer(kind);
  const size = container ? (Array.isArray(value) ? value.length : Object.keys(value).length) : 0;
  const collapsed = container && size > 0 && isCollapsed(pointer, depth, size);
  const node = h("div", { class: "jnode", "data-pointer": pointer, "data-kind": kind });
  node._value = value;
  node._kind = kind;
  if (collapsed) node.classList.add("collapsed");

  const row = h("div", { class: "jrow" });
  row.append(container && size > 0
    ? h("button", { type: "button", class: "jtoggle", "aria-expanded": String(!collapsed), "aria-label": collapsed ? "Expand" : "Collapse" })
    : h("span", { class: "jspacer" }));
  if (key !== null) {
    row.append(h("span", { class: `jkey${inArray ? " index" : ""}`, text: inArray ? key : keyLabel(key) }));
    row.append(h("span", { class: "jpunct", text: ":" }));
  }
  if (container) {
    const array = kind === "array";
    row.append(h("span", { class: "jbrace", text: array ? "[ ]" : "{ }" }));
    if (size > 0) row.append(h("span", { class: "jcount", text: array ? `${size} item${size === 1 ? "" : "s"}` : `${size} key${size === 1 ? "" : "s"}` }));
    else row.append(h("span", { class: "jcount", text: "empty" }));
    if (collapsed && size > 0) row.append(h("span", { class: "jpreview", text: preview(value) }));
    if (pointer !== S.path) row.append(h("button", { type: "button", class: "jfocus", title: `View only ${pointer || "the whole state"}`, "data-pointer": pointer, text: "view ›" }));
  } else {
    row.append(h("span", { class: `jval j${kind}`, "data-testid": "value", text: JSON.stringify(value) }));
  }
  node.append(row);

  let changed = false;
  if (context.highlight) {
    if (!old) changed = parentExisted;                       // appeared
    else if (old._kind !== kind) changed = true;             // changed kind
    else if (!container) changed = old._value !== value;     // a changed leaf
    else if (collapsed) changed = old._value !== value;      // something inside a closed container
  }
  if (changed) {
    node.classList.add("flash");
    node.dataset.changed = String(context.version);
    row.addEventListener("animationend", () => node.classList.remove("flash"), { once: true });
  } else if (old?.dataset.changed) {
    node.dataset.changed = old.dataset.changed;
  }

  if (container && !collapsed) {
    const box = h("div", { class: "jchildren" });
    const array = kind === "array";
    const keys = array ? null : Object.keys(value);
    const limit = S.limits.get(pointer) ?? CHILD_LIMIT;
    const shown = Math.min(size, limit);
    const oldChildren = old?._children;
    node._children = new Map();
    for (let i = 0; i < shown; i++) {
      const childKey = array ? String(i) : keys[i];
      const child = renderNode(childKey, value[childKey], `${pointer}/${escapeToken(childKey)}`, depth + 1,
        oldChildren?.get(childKey), context, Boolean(oldChildren), array);
      node._children.set(childKey, child);
      box.append(child);
    }
    if (size > shown) {
      box.append(h("button", { type: "button", class: "link jmore", "data-pointer": pointer, text: `show ${Math.min(size - shown, CHILD_LIMIT)} more of ${size - shown} hidden` }));
    }
    node.append(box);
  }
  return node;
}

function treeMessage(html) {
  S.renderedRoot = null;
  S.renderedKey = null;
  const message = h("div", { class: "tree-message" });
  message.innerHTML = html;
  ui.tree.replaceChildren(message);
}

const escapeHTML = (text) => String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function renderTree(highlight = false) {
  const past = S.past;
  ui.tree.dataset.mode = past ? "past" : "live";
  ui.tree.dataset.loading = String(Boolean(past?.loading));
  if (S.status === "unauthorized" || S.status === "forbidden") {
    return treeMessage(`Not connected: ${S.status === "unauthorized" ? "this server needs an access token" : "the token may not read the state"}. Use the <b>Token</b> button at the top.`);
  }
  let value, version, path;
  if (past) {
    if (past.error) {
      return treeMessage(`Version <code>${past.version}</code> cannot be shown: ${escapeHTML(past.error.detail || past.error.title || "error")}`);
    }
    if (past.missing) return treeMessage(`At version <code>${past.version}</code> there was nothing at <code>${escapeHTML(past.path)}</code>.`);
    if (past.state === undefined) return past.loading ? undefined : treeMessage("Loading…");
    ({ state: value, version, path } = past);
  } else {
    if (S.live.state === undefined) return treeMessage(`Waiting for the state from <code>${escapeHTML(BASE)}</code>…`);
    ({ state: value, version, path } = S.live);
  }
  const key = `${path}`;
  const old = S.renderedKey === key ? S.renderedRoot : null;
  const context = { highlight: highlight && old !== null, version, force: false };
  let rootKey = null;
  try { rootKey = lastToken(path); } catch { rootKey = path; }
  const root = renderNode(rootKey, value, path, 0, old, context, false);
  S.dirty = null;
  if (root !== S.renderedRoot || ui.tree.firstChild !== root) ui.tree.replaceChildren(root);
  if (value === null && path !== "" && !past) {
    ui.tree.append(h("div", { class: "tree-message", text: `Nothing at ${path} yet (or it is null): it shows up here as soon as something is set there.` }));
  }
  S.renderedRoot = root;
  S.renderedKey = key;
}

let renderPending = null;
function scheduleRender(highlight = false) {
  if (renderPending) {
    renderPending.highlight ||= highlight;
    return;
  }
  renderPending = { highlight };
  const run = () => {
    const { highlight: flash } = renderPending;
    renderPending = null;
    renderTree(flash);
  };
  if (document.hidden) setTimeout(run, 50);
  else requestAnimationFrame(run);
}

ui.tree.addEventListener("click", (event) => {
  const target = event.target;
  if (target.closest(".jfocus")) return setPath(target.closest(".jfocus").dataset.pointer);
  const more = target.closest(".jmore");
  if (more) {
    const pointer = more.dataset.pointer;
    S.limits.set(pointer, (S.limits.get(pointer) ?? CHILD_LIMIT) + CHILD_LIMIT);
    S.dirty = pointer;
    return renderTree(false);
  }
  const toggle = target.closest(".jtoggle") ?? (target.closest(".jkey, .jbrace, .jcount, .jpreview") && target.closest(".jrow")?.querySelector(".jtoggle"));
  if (toggle) {
    const node = toggle.closest(".jnode");
    const pointer = node.dataset.pointer;
    S.collapsed.set(pointer, !node.classList.contains("collapsed"));
    S.dirty = pointer;
    renderTree(false);
  }
});

ui.expandAll.addEventListener("click", () => {
  S.collapsed.clear();
  S.defaultCollapse = "expanded";
  S.renderedRoot = null;
  renderTree(false);
});
ui.collapseAll.addEventListener("click", () => {
  S.collapsed.clear();
  S.defaultCollapse = "collapsed";
  S.renderedRoot = null;
  renderTree(false);
});

// ---------------------------------------------------------------------------------------------
// The selected sub-tree (JSON Pointer), mirrored in the URL: #path=/players/0

function encodePointer(pointer) {
  return encodeURIComponent(pointer).replace(/%2F/g, "/");
}

function pathFromURL() {
  const hash = location.hash.replace(/^#/, "");
  for (const part of hash.split("&")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index) === "path") {
      try { return decodeURIComponent(part.slice(index + 1)); } catch { return part.slice(index + 1); }
    }
  }
  return new URLSearchParams(location.search).get("path") ?? "";
}

function validPointer(pointer) {
  try {
    parsePointer(pointer);
    return null;
  } catch (error) {
    return pointer[0] !== "/" ? `A JSON Pointer starts with "/", e.g. /players/0 (or leave it empty for the whole state).` : error.message;
  }
}

function setPath(pointer) {
  pointer = pointer.trim();
  const problem = validPointer(pointer);
  if (problem) {
    ui.pathError.textContent = problem;
    ui.pathError.hidden = false;
    return;
  }
  const search = new URLSearchParams(location.search);
  search.delete("path");
  const searchText = search.toString();
  const url = `${location.pathname}${searchText ? `?${searchText}` : ""}${pointer ? `#path=${encodePointer(pointer)}` : ""}`;
  if (pointer !== S.path) history.pushState(null, "", url);
  applyPath(pointer);
}

function applyPath(pointer) {
  ui.pathError.hidden = true;
  ui.pathInput.value = pointer;
  if (pointer === S.path && S.subscription) return;
  const problem = validPointer(pointer);
  if (problem) {
    ui.pathError.textContent = `The address asks for ${JSON.stringify(pointer)}: ${problem}`;
    ui.pathError.hidden = false;
    pointer = "";
    ui.pathInput.value = "";
  }
  S.path = pointer;
  S.renderedRoot = null;
  S.renderedKey = null;
  renderCrumbs();
  if (S.past) showVersion(S.past.version);
  if (S.status !== "unauthorized" && S.status !== "forbidden" && S.client) subscribe();
  renderTree(false);
}

function renderCrumbs() {
  const tokens = parsePointer(S.path);
  const parts = [crumb("state", "", tokens.length === 0)];
  let pointer = "";
  tokens.forEach((token, i) => {
    pointer += `/${escapeToken(token)}`;
    parts.push(h("span", { class: "sep", text: "/" }));
    parts.push(crumb(token, pointer, i === tokens.length - 1));
  });
  ui.crumbs.replaceChildren(...parts);
}

function crumb(label, pointer, current) {
  const link = h("a", { href: pointer ? `#path=${encodePointer(pointer)}` : "#", "aria-current": current ? "location" : null, text: label });
  link.addEventListener("click", (event) => {
    event.preventDefault();
    setPath(pointer);
  });
  return link;
}

ui.pathForm.addEventListener("submit", (event) => {
  event.preventDefault();
  setPath(ui.pathInput.value);
});
ui.pathClear.addEventListener("click", () => setPath(""));
ui.pathInput.addEventListener("input", () => { ui.pathError.hidden = true; });
window.addEventListener("popstate", () => applyPath(pathFromURL()));
window.addEventListener("hashchange", () => applyPath(pathFromURL()));

// ---------------------------------------------------------------------------------------------
// The event log: GET /history (NDJSON), newest first

let logBusy = false;
let logAgain = false;

async function fetchHistory(since, limit) {
  const response = await api("GET", `/history?since=${since}&limit=${limit}`);
  const oldest = response.headers.get("Reactor-Oldest-Version");
  if (oldest !== null && /^\d+$/.test(oldest.trim())) {
    S.oldest = Number(oldest);
    updateScrubber();
  }
  if (response.status === 404) return { unsupported: true };
  if (response.status === 401) return { unauthorized: true };
  if (response.status === 410) return { gone: await problemOf(response) };
  if (!response.ok) throw new ReactorError(await problemOf(response), response.status);
  const text = await response.text();
  const entries = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const entry = JSON.parse(line);
    if (typeof entry?.version === "number") entries.push(entry);
  }
  // A page may end before `limit` (large events): the server's version says whether more follow.
  const current = Number(response.headers.get("Reactor-Version"));
  return { entries, current: Number.isFinite(current) ? current : null };
}

/** Brings the log up to date; one request at a time, repeated while changes keep coming. */
async function syncLog() {
  if (S.history === "no" || S.version === null || S.status === "unauthorized" || S.status === "forbidden") return;
  if (logBusy) {
    logAgain = true;
    return;
  }
  logBusy = true;
  let goneRetries = 0;
  try {
    do {
      logAgain = false;
      const initial = S.logLast === null;
      let since = initial ? Math.max(0, S.version - LOG_INITIAL) : S.logLast;
      const limit = initial ? LOG_INITIAL : LOG_CAP;
      let skipped = 0;
      if (!initial && S.version - since > LOG_CAP) {
        skipped = S.version - LOG_CAP - since;
        since = S.version - LOG_CAP;
      }
      const answer = await fetchHistory(since, limit);
      if (answer.unsupported) return historyUnsupported();
      if (answer.unauthorized) return denied("unauthorized");
      if (answer.gone) {
        // The server no longer keeps the events after `since`: start again from what it keeps.
        if (goneRetries++ < 2 && S.oldest !== null && S.oldest > since) {
          S.logLast = S.oldest;
          if (!initial) appendLog([], { skipped: S.oldest - since, fresh: true });
          logAgain = true;
        } else {
          S.logLast = S.version;
          showLogNote(`Older events are no longer kept by the server: ${answer.gone.detail || answer.gone.title || "410 Gone"}`);
        }
        continue;
      }
      if (S.history !== "yes") {
        S.history = "yes";
        updateScrubber();
      }
      const entries = answer.entries.filter((entry) => S.logLast === null || entry.version > S.logLast);
      appendLog(entries, { skipped, fresh: !initial });
      if (entries.length) {
        S.logLast = entries[entries.length - 1].version;
        noteVersion(S.logLast);
      } else if (initial) {
        S.logLast = since;
      }
      const last = answer.entries.length ? answer.entries[answer.entries.length - 1].version : null;
      // A full page, or one that ended before the server's version: more may be waiting.
      if (answer.entries.length >= limit || (last !== null && answer.current !== null && last < answer.current)) logAgain = true;
    } while (logAgain);
  } catch (error) {
    console.warn("event log:", error);
  } finally {
    logBusy = false;
  }
}

function historyUnsupported() {
  S.history = "no";
  const text = "This reactord keeps no history (GET /history answered 404), so there is no event log or time travel. A newer reactord has both.";
  showLogNote(text);
  ui.historyNote.textContent = "Time travel needs GET /history and GET /state?version=N, which this server does not have (404).";
  ui.historyNote.hidden = false;
  ui.logEmpty.hidden = true;
  updateScrubber();
}

function showLogNote(text) {
  ui.logNote.textContent = text;
  ui.logNote.hidden = false;
}

function summarize(event) {
  if (!event || typeof event !== "object") return { type: "event", path: null, rest: JSON.stringify(event) };
  const { type, path, ...rest } = event;
  const restText = Object.keys(rest).length ? JSON.stringify(Object.keys(rest).length === 1 && "value" in rest ? rest.value : rest) : "";
  return { type: typeof type === "string" ? type : "event", path: typeof path === "string" ? path : null, rest: restText };
}

function logItem(entry, fresh) {
  if (entry.gap) {
    return h("li", { class: "gap", text: `… ${entry.gap} event${entry.gap === 1 ? "" : "s"} not shown` });
  }
  const { type, path, rest } = summarize(entry.event);
  const item = h("li", {
    "data-testid": "log-entry",
    "data-version": entry.version,
    title: `Version ${entry.version}. Click to see the state right after this event.\n\n${JSON.stringify(entry.event, null, 2)}`,
    class: fresh ? "fresh" : null,
  },
  h("span", { class: "ev-version", text: `#${entry.version}` }),
  h("span", { class: "ev-type", "data-type": type, text: type }),
  h("span", { class: "ev-body" }, path !== null ? h("span", { class: "ev-path", text: path === "" ? '""' : path }) : null, rest));
  if (S.past?.version === entry.version) item.classList.add("selected");
  return item;
}

function appendLog(entries, { skipped = 0, fresh = false } = {}) {
  const items = [];
  if (skipped > 0 && S.log.length > 0) items.push({ gap: skipped });
  items.push(...entries);
  for (const entry of items) {
    S.log.unshift(entry);
    ui.log.prepend(logItem(entry, fresh));
  }
  while (S.log.length > LOG_CAP) {
    S.log.pop();
    ui.log.lastElementChild?.remove();
  }
  ui.logEmpty.hidden = S.log.length > 0 || S.history === "no";
  ui.logCount.textContent = S.log.length ? `${S.log.filter((e) => !e.gap).length} shown · newest first` : "newest first";
}

ui.log.addEventListener("click", (event) => {
  const item = event.target.closest("li[data-version]");
  if (item) showVersion(Number(item.dataset.version));
});

// A subscription to a sub-tree hears nothing of events elsewhere, so while one is selected the
// version (and the log) are polled: GET /readyz answers the current version, and needs no token.
async function pollVersion() {
  if (!S.path || S.status !== "open" || document.hidden) return;
  try {
    const response = await fetch(`${BASE}/readyz`, { cache: "no-store" });
    const body = response.ok ? await response.json() : null;
    if (typeof body?.version === "number" && (S.version === null || body.version > S.version)) {
      noteVersion(body.version);
      syncLog();
    }
  } catch { /* the subscription reports connection trouble */ }
}
setInterval(pollVersion, PATH_POLL_MS);

// ---------------------------------------------------------------------------------------------
// Time travel: GET /state?version=N

let pastRequest = 0;
let scrubTimer = null;

function updateScrubber() {
  const max = S.version ?? 0;
  const min = Math.min(max, S.oldest ?? 0);
  const disabled = S.history !== "yes" || S.version === null || S.status === "unauthorized" || S.status === "forbidden";
  ui.scrubber.dataset.disabled = String(disabled);
  for (const control of [ui.scrub, ui.scrubVersion, ui.scrubBack, ui.scrubForward]) control.disabled = disabled;
  ui.scrub.min = String(min);
  ui.scrub.max = String(max);
  ui.scrubVersion.min = String(min);
  ui.scrubVersion.max = String(max);
  const shown = S.past ? S.past.version : max;
  ui.scrub.value = String(shown);
  if (document.activeElement !== ui.scrubVersion) ui.scrubVersion.value = S.version === null ? "" : String(shown);
  ui.scrubMin.textContent = `oldest ${min}`;
  ui.scrubMax.textContent = `now ${max}`;
  ui.scrubLive.setAttribute("aria-pressed", String(!S.past));
  ui.scrubForward.disabled ||= !S.past;
  ui.scrubBack.disabled ||= shown <= min;
}

function updatePastUI() {
  const past = S.past;
  ui.pastBanner.hidden = !past;
  if (past) {
    ui.pastLabel.replaceChildren(
      "Viewing version ", h("strong", { id: "past-version", "data-testid": "past-version", text: String(past.version) }), " (past)",
      past.loading ? " · loading…" : "",
      S.version !== null ? ` · the state is now at ${S.version}` : "");
  }
  for (const item of ui.log.querySelectorAll("li.selected")) item.classList.remove("selected");
  if (past) ui.log.querySelector(`li[data-version="${past.version}"]`)?.classList.add("selected");
  updateScrubber();
}

async function showVersion(version) {
  if (!Number.isFinite(version) || S.history === "no") return;
  version = Math.max(0, Math.floor(version));
  if (S.version !== null && version >= S.version) return goLive();
  const request = ++pastRequest;
  const path = S.path;
  S.past = { ...(S.past && S.past.path === path ? S.past : {}), version, path, loading: true, error: null };
  updatePastUI();
  renderTree(false);
  let past;
  try {
    const response = await api("GET", `/state?version=${version}${path ? `&path=${encodeURIComponent(path)}` : ""}`);
    if (request !== pastRequest) return;
    if (response.ok) {
      const etag = response.headers.get("ETag");
      if (etag && etag.replace(/^W\//, "") !== `"${version}"`) {
        // An older reactord ignores ?version= and answers the current state.
        timeTravelUnsupported();
        return goLive();
      }
      past = { version, path, state: await response.json() };
    } else {
      const problem = await problemOf(response);
      if (request !== pastRequest) return;
      if (response.status === 401) return denied("unauthorized");
      if (problem.type === "/problems/history-unavailable" && response.headers.get("Retry-After") !== null) {
        // The server rebuilds a few past states at a time (scrubbing sends many): ask again soon,
        // unless another version was asked for meanwhile.
        setTimeout(() => { if (request === pastRequest) showVersion(version); }, 300);
        return;
      }
      if (problem.type === "/problems/path-not-found") past = { version, path, missing: true };
      else if (response.status === 404) return goLive(); // newer than the server's version: that is the live state
      else {
        if (response.status === 410) {
          const oldest = response.headers.get("Reactor-Oldest-Version");
          if (oldest !== null && /^\d+$/.test(oldest)) S.oldest = Number(oldest);
        }
        past = { version, path, error: problem };
      }
    }
  } catch (error) {
    if (request !== pastRequest) return;
    past = { version, path, error: { title: "Network error", detail: `${error.message}` } };
  }
  if (request !== pastRequest) return;
  S.past = past;
  updatePastUI();
  renderTree(true);
}

function goLive() {
  pastRequest++;
  clearTimeout(scrubTimer);
  if (!S.past) return updateScrubber();
  S.past = null;
  updatePastUI();
  renderTree(true);
}

function timeTravelUnsupported() {
  S.history = "no";
  ui.historyNote.textContent = "This server answered GET /state?version=N with the current state: it cannot show past versions.";
  ui.historyNote.hidden = false;
  updateScrubber();
}

ui.scrub.addEventListener("input", () => {
  const version = Number(ui.scrub.value);
  ui.scrubVersion.value = String(version);
  clearTimeout(scrubTimer);
  scrubTimer = setTimeout(() => showVersion(version), 120);
});
ui.scrubVersion.addEventListener("change", () => {
  if (ui.scrubVersion.value !== "") showVersion(Number(ui.scrubVersion.value));
});
ui.scrubVersion.addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    if (ui.scrubVersion.value !== "") showVersion(Number(ui.scrubVersion.value));
  }
});
ui.scrubBack.addEventListener("click", () => showVersion((S.past?.version ?? S.version ?? 0) - 1));
ui.scrubForward.addEventListener("click", () => S.past && showVersion(S.past.version + 1));
ui.scrubLive.addEventListener("click", goLive);
ui.liveButton.addEventListener("click", goLive);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && S.past && !ui.tokenDialog.open) goLive();
});

// ---------------------------------------------------------------------------------------------
// Firing events: POST /events

const EXAMPLES = [
  ["set", { type: "set", path: "/players/0", value: { name: "Ayla", level: 1 } }],
  ["merge", { type: "merge", path: "/players/0", value: { level: 2, class: "mage" } }],
  ["remove", { type: "remove", path: "/players/0/class" }],
  ["increment", { type: "increment", path: "/counter", by: 1 }],
  ["append", { type: "append", path: "/log", value: "hello" }],
  ["patch", { type: "patch", ops: [{ op: "test", path: "/counter", value: 1 }, { op: "replace", path: "/counter", value: 10 }] }],
  ["batch", [{ type: "increment", path: "/counter" }, { type: "set", path: "/status", value: "busy" }]],
];

const EXAMPLE_HELP = {
  set: "puts a value at a path",
  merge: "merges an object into the one at a path (RFC 7386)",
  remove: "removes the value at a path",
  increment: "adds to a number",
  append: "appends to an array",
  patch: "an RFC 6902 JSON Patch; a failing test op is refused (409)",
  batch: "an array of events: all applied, or none",
};

ui.examples.append(h("span", { class: "examples-label", text: "Examples:" }));
for (const [name, event] of EXAMPLES) {
  const button = h("button", { type: "button", "data-example": name, title: `${name}: ${EXAMPLE_HELP[name]}`, text: name });
  button.addEventListener("click", () => {
    ui.editor.value = JSON.stringify(event, null, 2);
    validate();
    ui.editor.focus();
  });
  ui.examples.append(button);
}

function lineAndColumn(text, position) {
  const before = text.slice(0, position);
  const line = before.split("\n").length;
  const column = position - before.lastIndexOf("\n");
  return { line, column };
}

/**
 * Where and why `text` is not JSON, as {position, message}: browsers word (and place) JSON.parse's
 * errors differently, and some give no position at all. Only called once JSON.parse has failed.
 */
function jsonError(text) {
  let i = 0;
  const describe = () => (i >= text.length ? "the end" : text[i] === "\n" ? "a line break" : `“${text[i]}”`);
  const fail = (message) => { throw { position: i, message }; };
  const space = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const string = () => {
    i++;
    for (;;) {
      if (i >= text.length) fail("this string never ends: a closing \" is missing");
      const c = text[i];
      if (c === '"') { i++; return; }
      if (c === "\\") {
        const next = text[i + 1];
        if (next !== undefined && '"\\/bfnrt'.includes(next)) i += 2;
        else if (next === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else fail(`invalid escape \\${next ?? ""} in a string`);
      } else if (c < " ") {
        fail("a string cannot hold a raw line break or tab: write \\n or \\t");
      } else i++;
    }
  };
  const container = (close, member) => {
    i++;
    space();
    if (text[i] === close) { i++; return; }
    for (;;) {
      space();
      if (member) {
        if (text[i] !== '"') fail(`expected a member name in double quotes, found ${describe()}`);
        string();
        space();
        if (text[i] !== ":") fail(`expected “:” after the member name, found ${describe()}`);
        i++;
      }
      value();
      space();
      if (text[i] === ",") {
        i++;
        space();
        if (text[i] === close) fail(`a trailing comma before “${close}” is not allowed in JSON`);
        continue;
      }
      if (text[i] === close) { i++; return; }
      fail(`expected “,” or “${close}”, found ${describe()}`);
    }
  };
  const value = () => {
    space();
    const c = text[i];
    if (c === "{") return container("}", true);
    if (c === "[") return container("]", false);
    if (c === '"') return string();
    if (c === "'") fail("strings take double quotes in JSON, not single ones");
    const number = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
    number.lastIndex = i;
    if (c === "-" || (c >= "0" && c <= "9")) {
      const match = number.exec(text);
      if (!match) fail("this is not a valid number");
      i += match[0].length;
      return;
    }
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, i)) { i += word.length; return; }
    }
    fail(i >= text.length ? "the JSON ends too early: a value is missing" : `expected a value, found ${describe()}`);
  };
  try {
    value();
    space();
    if (i < text.length) fail(`unexpected ${describe()} after the end of the JSON value`);
  } catch (error) {
    if (typeof error?.position === "number") return error;
    throw error;
  }
  return null;
}

let lastValid = null;

/** Checks the editor's JSON as it is typed; the Fire button is enabled only when it parses. */
function validate() {
  const text = ui.editor.value;
  const say = (state, message, valid = null) => {
    ui.validation.dataset.state = state;
    ui.validation.textContent = message;
    ui.editor.setAttribute("aria-invalid", String(state === "error"));
    lastValid = valid;
    ui.fireButton.disabled = valid === null || ui.fireButton.dataset.busy === "true";
    return valid;
  };
  if (text.trim() === "") return say("empty", "Write an event as JSON, or pick an example above.");
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const found = jsonError(text) ?? { position: text.length, message: String(error.message) };
    const where = lineAndColumn(text, found.position);
    return say("error", `Line ${where.line}, column ${where.column}: ${found.message}`);
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return say("error", "An empty array fires nothing: put events in it.");
    if (!value.every((item) => item && typeof item === "object" && !Array.isArray(item))) {
      return say("error", "A batch is an array of event objects.");
    }
    return say("ok", `✓ Valid JSON: a batch of ${value.length} event${value.length === 1 ? "" : "s"}, applied all or none.`, value);
  }
  if (!value || typeof value !== "object") {
    return say("error", 'An event is a JSON object such as {"type": "set", "path": "/a", "value": 1}.');
  }
  if (typeof value.type !== "string") {
    return say("warning", 'Valid JSON, but it has no "type": the server will refuse it. Pick an example to see the types.', value);
  }
  return say("ok", `✓ Valid JSON: a ${value.type} event.`, value);
}

function showProblem(problem, status) {
  const shownStatus = problem.status ?? status;
  ui.errorStatus.textContent = shownStatus ? String(shownStatus) : "";
  ui.errorTitle.textContent = problem.title || "Error";
  ui.errorDetail.textContent = problem.detail || "";
  ui.errorDetail.hidden = !problem.detail;
  const extra = [];
  for (const [name, value] of Object.entries(problem)) {
    if (["title", "status", "detail"].includes(name)) continue;
    const text = Array.isArray(value) && value.every((v) => typeof v === "string") ? value.join(", ")
      : typeof value === "string" ? value : JSON.stringify(value);
    extra.push(h("dt", { text: name }), h("dd", { "data-member": name, text }));
  }
  ui.errorExtra.replaceChildren(...extra);
  ui.errorBox.hidden = false;
}

function hideProblem() { ui.errorBox.hidden = true; }
ui.errorClose.addEventListener("click", hideProblem);

function showResult(nodes) {
  ui.fireResult.replaceChildren(...nodes);
  ui.fireResult.hidden = false;
}

async function fire(event) {
  event?.preventDefault();
  const value = validate();
  if (value === null) return;
  hideProblem();
  ui.fireResult.hidden = true;
  ui.fireButton.dataset.busy = "true";
  ui.fireButton.disabled = true;
  try {
    if (Array.isArray(value)) {
      const answer = await S.client.fireBatch(value);
      noteVersion(answer.version);
      showResult([`✓ Applied ${answer.applied ?? value.length} events, up to version `, h("code", { "data-testid": "fired-version", text: String(answer.version) })]);
    } else {
      const version = await S.client.fire(value);
      noteVersion(version);
      showResult(["✓ Applied at version ", h("code", { "data-testid": "fired-version", text: String(version) })]);
    }
    syncLog();
  } catch (error) {
    if (error instanceof ReactorError) {
      showProblem(error.problem ?? {}, error.status);
      if (error.status === 401) openTokenDialog("Firing needs an access token (the server answered 401 Unauthorized).", true);
    } else {
      showProblem({ title: "Could not reach the server", detail: `${error.message}. Whether the event was applied is unknown; the event log will tell.` });
    }
  } finally {
    ui.fireButton.dataset.busy = "false";
    validate();
  }
}

ui.fireForm.addEventListener("submit", fire);
ui.editor.addEventListener("input", validate);
ui.editor.addEventListener("change", validate);
ui.editor.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    if (!ui.fireButton.disabled) fire();
  }
});

// ---------------------------------------------------------------------------------------------
// The token

function updateTokenButton() {
  ui.tokenButton.dataset.set = String(Boolean(S.token));
  ui.tokenButtonLabel.textContent = S.token ? "Token set" : "Token";
}

function openTokenDialog(reason, alert = false) {
  ui.tokenReason.textContent = reason;
  ui.tokenReason.dataset.alert = String(alert);
  if (ui.tokenDialog.open) return;
  ui.tokenInput.value = S.token;
  ui.tokenDialog.showModal();
  ui.tokenInput.focus();
}

function useToken(token) {
  S.token = token;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  updateTokenButton();
  makeClient();
  connect();
  renderTree(false);
}

ui.tokenButton.addEventListener("click", () => openTokenDialog(
  "A bearer token for a server started with --token. It is sent as Authorization: Bearer (HTTP) and access_token (WebSocket), and kept for this tab only."));
ui.tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  ui.tokenDialog.close();
  useToken(ui.tokenInput.value.trim());
});
ui.tokenForget.addEventListener("click", () => {
  ui.tokenDialog.close();
  useToken("");
});
ui.tokenCancel.addEventListener("click", () => ui.tokenDialog.close());

// ---------------------------------------------------------------------------------------------
// Theme

function applyTheme(theme) {
  if (theme === "dark" || theme === "light") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
applyTheme(localStorage.getItem(THEME_KEY));
ui.themeButton.addEventListener("click", () => {
  const dark = document.documentElement.dataset.theme
    ? document.documentElement.dataset.theme === "dark"
    : matchMedia("(prefers-color-scheme: dark)").matches;
  const theme = dark ? "light" : "dark";
  localStorage.setItem(THEME_KEY, theme);
  applyTheme(theme);
});

// ---------------------------------------------------------------------------------------------
// Start

function start() {
  ui.server.textContent = BASE.replace(/^https?:\/\//, "");
  ui.server.title = `The reactord this page talks to: ${BASE}`;
  updateTokenButton();
  validate();
  makeClient();
  const pointer = pathFromURL();
  const problem = validPointer(pointer);
  S.path = problem ? "" : pointer;
  ui.pathInput.value = S.path;
  if (problem) {
    ui.pathError.textContent = `The address asks for ${JSON.stringify(pointer)}: ${problem}`;
    ui.pathError.hidden = false;
  }
  renderCrumbs();
  updateVersion();
  renderTree(false);
  setInterval(tickRate, 500);
  tickRate();
  connect();
}

start();
