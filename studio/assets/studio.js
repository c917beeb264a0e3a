// stategraph Studio: one plain ES module, no build step.
//
// Routes (client side, by location.pathname under /studio):
//   /studio                                   threads, and the newest thread's graph
//   /studio/threads/{thread}                  a thread: graph, timeline, values, diff, drive
//   /studio/threads/{thread}/checkpoints/{id} the same with that checkpoint selected
// Data comes from /studio/api (see the studio crate); driving uses the server's
// LangGraph Platform routes (/threads/..., /assistants/...) when /studio/api/info says so.

const BASE = "/studio";
const API = `${BASE}/api`;
const ROOT = ""; // the server's own routes (driving) live at the root
const KEY_STORE = "stategraph-studio-api-key";

const $ = (sel) => document.querySelector(sel);

/** Shared page state. */
const state = {
  info: null,
  thread: null, // the thread detail from /studio/api/threads/{id}
  selected: null, // checkpoint id
  checkpoint: null, // its detail
  search: "",
  running: false,
  inputSchema: null, // the input schema of graph `inputSchemaOf`
  inputSchemaOf: null,
};

// ---------------------------------------------------------------------------
// HTTP

/** An HTTP error with the server's `detail` (and `errors`, for 422s). */
class HttpError extends Error {
  constructor(status, detail, errors) {
    super(detail);
    this.status = status;
    this.errors = errors || [];
  }
}

function headers(extra) {
  const h = { accept: "application/json", ...extra };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) h["x-api-key"] = key;
  return h;
}

async function failure(res) {
  let detail = `${res.status} ${res.statusText}`;
  let errors = [];
  try {
    const body = await res.json();
    if (body && typeof body.detail === "string") detail = body.detail;
    if (body && Array.isArray(body.errors)) errors = body.errors;
  } catch (_) {
    /* not JSON: keep the status line */
  }
  if (res.status === 401 || res.status === 403) askForKey(res.status === 403 ? detail : "");
  return new HttpError(res.status, detail, errors);
}

/** GET or POST JSON; throws HttpError on a non-2xx answer. */
async function call(path, body) {
  const init = body === undefined
    ? { headers: headers() }
    : { method: "POST", headers: headers({ "content-type": "application/json" }), body: JSON.stringify(body) };
  const res = await fetch(path, init);
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// ---------------------------------------------------------------------------
// API key

function askForKey(message) {
  const form = $("#key-form");
  form.hidden = false;
  $("#app").hidden = true;
  $("#key-error").textContent = message || "";
  $("#key-input").focus();
}

$("#key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY_STORE, $("#key-input").value);
  $("#key-form").hidden = true;
  $("#app").hidden = false;
  boot();
});

// ---------------------------------------------------------------------------
// Small DOM helpers

/** Creates an element: h("div", {class: "x"}, child, "text", ...). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function showMessage(text) {
  $("#message").textContent = text || "";
}

function fmtTime(rfc3339) {
  if (!rfc3339) return "";
  const d = new Date(rfc3339);
  return isNaN(d) ? rfc3339 : d.toLocaleString();
}

function fmtDuration(us) {
  if (us === null || us === undefined) return "";
  if (us < 1000) return `${us} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(1)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}

const STATUS_ICON = { running: "▶", interrupted: "‖", finished: "✓", failed: "✕" };

function statusBadge(status) {
  return h("span", { class: `status status-${status}`, "data-status": status },
    h("span", { "aria-hidden": "true" }, STATUS_ICON[status] || "?"), status);
}

/** `["a", "a", "b"]` as `a ×2, b` (the order of first appearance kept). */
function counted(names) {
  const counts = new Map();
  for (const n of names || []) counts.set(n, (counts.get(n) || 0) + 1);
  return [...counts].map(([n, c]) => (c > 1 ? `${n} ×${c}` : n)).join(", ");
}

function short(json, max = 80) {
  const text = JSON.stringify(json);
  if (text === undefined) return "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// ---------------------------------------------------------------------------
// JSON tree

/** A collapsible tree of `value`: objects and arrays as <details>, open to `open` levels. */
function jsonTree(value, key, depth = 0, open = 2) {
  const label = key === undefined ? null : h("span", { class: "k" }, `${key}: `);
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const size = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    const details = h("details", { open: depth < open });
    details.append(h("summary", {}, label, h("span", { class: "sz" }, size)));
    for (const [k, v] of entries) details.append(jsonTree(v, k, depth + 1, open));
    return details;
  }
  const cls = typeof value === "string" ? "s" : typeof value === "number" ? "n"
    : typeof value === "boolean" ? "b" : "z";
  return h("div", { class: "leaf" }, label, h("span", { class: cls }, JSON.stringify(value)));
}

// ---------------------------------------------------------------------------
// Routing

function route() {
  const rest = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "";
  const parts = rest.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "threads" && parts[1] !== undefined) {
    return { thread: parts[1], checkpoint: parts[2] === "checkpoints" ? parts[3] : undefined };
  }
  return {};
}

function threadUrl(tid, cid) {
  let url = `${BASE}/threads/${encodeURIComponent(tid)}`;
  if (cid) url += `/checkpoints/${encodeURIComponent(cid)}`;
  return url;
}

function navigate(url, replace) {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  render();
}

document.addEventListener("click", (e) => {
  const a = e.target.closest("a[data-nav]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  navigate(a.getAttribute("href"));
});
window.addEventListener("popstate", () => render());

// ---------------------------------------------------------------------------
// Threads list

async function loadThreads() {
  const q = new URLSearchParams();
  if (state.search) q.set("search", state.search);
  const status = $("#status-filter").value;
  if (status) q.set("status", status);
  q.set("limit", "100");
  const list = $("#threads");
  try {
    const data = await call(`${API}/threads?${q}`);
    const current = route().thread;
    list.replaceChildren(...data.threads.map((t) => h("li", {},
      h("a", {
        href: threadUrl(t.thread_id), "data-nav": true, "data-thread": t.thread_id,
        "aria-current": t.thread_id === current ? "page" : null,
      },
      h("div", { class: "thread-id" }, t.thread_id),
      h("div", { class: "thread-sub" }, statusBadge(t.status), ` step ${t.step} · ${t.checkpoints} checkpoints`),
      h("div", { class: "thread-sub" }, `updated ${fmtTime(t.updated_at)}`)))));
    const filters = [state.search ? `“${state.search}”` : null, status || null].filter(Boolean);
    $("#threads-total").textContent = filters.length
      ? `${data.total} matching ${filters.join(", ")}`
      : `${data.total} thread${data.total === 1 ? "" : "s"}`;
    return data.threads;
  } catch (e) {
    $("#threads-total").textContent = `threads unavailable: ${e.message}`;
    return [];
  }
}

let searchTimer = null;
$("#search").addEventListener("input", (e) => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    state.search = e.target.value.trim();
    loadThreads();
  }, 200);
});
$("#status-filter").addEventListener("change", () => loadThreads());
$("#search-form").addEventListener("submit", (e) => {
  e.preventDefault();
  state.search = $("#search").value.trim();
  loadThreads();
});

// ---------------------------------------------------------------------------
// Graph

const NODE_H = 36;

function nodeWidth(label) {
  return Math.max(70, label.length * 8 + 24);
}

/**
 * Lays `shape` out with dagre (subgraphs as compound clusters whose children are
 * prefixed `parent/`), returns the dagre graph. Edges into a subgraph go to its
 * `__start__`, edges out of it leave from its `__end__` (dagre cannot attach edges to
 * a cluster).
 */
function layout(shape) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 56, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const entry = (prefix, id, node) => (node && node.subgraph ? `${prefix}${id}/__start__` : `${prefix}${id}`);
  const exit = (prefix, id, node) => (node && node.subgraph ? `${prefix}${id}/__end__` : `${prefix}${id}`);
  const add = (sh, prefix, parent) => {
    const byId = new Map(sh.nodes.map((n) => [n.id, n]));
    for (const n of sh.nodes) {
      const key = `${prefix}${n.id}`;
      if (n.subgraph) {
        g.setNode(key, { label: n.id, cluster: true, node: n, paddingTop: 24 });
        add(n.subgraph, `${key}/`, key);
      } else {
        const label = n.kind === "start" ? "START" : n.kind === "end" ? "END" : n.id;
        g.setNode(key, { label, width: nodeWidth(label), height: NODE_H + (n.deferred ? 10 : 0), node: n, local: n.id, top: prefix === "" });
      }
      if (parent) g.setParent(key, parent);
    }
    sh.edges.forEach((e, i) => {
      const from = exit(prefix, e.source, byId.get(e.source));
      const to = entry(prefix, e.target, byId.get(e.target));
      const label = e.conditional ? "route" : e.join && e.join.length ? "join" : "";
      g.setEdge(from, to, {
        edge: e, top: prefix === "", label, width: label ? label.length * 7 + 8 : 0,
        height: label ? 14 : 0, labelpos: "c",
      }, `${prefix}#${i}`);
    });
  };
  add(shape, "", null);
  dagre.layout(g);
  return g;
}

/** Draws the thread's graph: `path` edges marked, `next` nodes highlighted. */
function drawGraph(shape, path, next) {
  const box = $("#graph");
  if (!shape) {
    box.replaceChildren(h("p", { class: "muted" }, "This thread's graph shape was not recorded."));
    return;
  }
  if (typeof dagre === "undefined") {
    box.replaceChildren(h("p", { class: "error" }, "the graph layout library (vendor/dagre.min.js) did not load"));
    return;
  }
  const g = layout(shape);
  const taken = new Map();
  for (const [from, to] of path || []) {
    const k = `${from}\u0000${to}`;
    taken.set(k, (taken.get(k) || 0) + 1);
  }
  const nextSet = new Set(next || []);
  const { width, height } = g.graph();
  const svg = s("svg", {
    width: Math.ceil(width), height: Math.ceil(height), viewBox: `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`,
    role: "img", "aria-labelledby": "graph-desc",
  });
  const desc = [];
  svg.append(s("title", { id: "graph-desc" }, `graph with nodes ${shape.nodes.map((n) => n.id).join(", ")}`));
  svg.append(s("defs", {},
    s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#56606b" })),
    s("marker", { id: "arrow-taken", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#1f5fbf" }))));
  // Clusters first (behind), then edges, then nodes.
  for (const v of g.nodes()) {
    const n = g.node(v);
    if (!n.cluster) continue;
    svg.append(s("g", { class: "g-cluster", "data-subgraph": v },
      s("rect", { x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height, rx: 6 }),
      s("text", { x: n.x - n.width / 2 + 8, y: n.y - n.height / 2 + 15 }, `subgraph ${n.label}`)));
  }
  for (const e of g.edges()) {
    const d = g.edge(e);
    const pts = d.points;
    const count = d.top ? taken.get(`${d.edge.source}\u0000${d.edge.target}`) || 0 : 0;
    const cls = ["edge-line", d.edge.conditional ? "conditional" : "", count ? "taken" : ""].join(" ").trim();
    let dd = `M${pts[0].x},${pts[0].y}`;
    for (let i = 1; i < pts.length; i++) dd += ` L${pts[i].x},${pts[i].y}`;
    const label = [d.label, count > 1 ? `×${count}` : ""].filter(Boolean).join(" ");
    const grp = s("g", {
      class: `g-edge${count ? " taken" : ""}`, "data-source": d.edge.source, "data-target": d.edge.target,
      "data-conditional": d.edge.conditional ? "true" : "false", "data-taken": String(count),
    },
    s("path", { d: dd, class: cls, "marker-end": count ? "url(#arrow-taken)" : "url(#arrow)" }));
    if (label) grp.append(s("text", { x: d.x, y: d.y + 4, "text-anchor": "middle" }, label));
    if (d.edge.join && d.edge.join.length) grp.append(s("title", {}, `join: waits for ${[d.edge.source, ...d.edge.join].join(" and ")}`));
    svg.append(grp);
    if (count) desc.push(`${d.edge.source}→${d.edge.target}`);
  }
  for (const v of g.nodes()) {
    const n = g.node(v);
    if (n.cluster) continue;
    const isNext = n.top && nextSet.has(n.local);
    const terminal = n.node.kind === "start" || n.node.kind === "end";
    const x = n.x - n.width / 2;
    const y = n.y - n.height / 2;
    const grp = s("g", {
      class: `g-node${terminal ? " terminal" : ""}${isNext ? " next" : ""}`,
      "data-node": v, "data-kind": n.node.kind, "data-next": isNext ? "true" : "false",
    },
    s("rect", { x, y, width: n.width, height: n.height, rx: terminal ? n.height / 2 : 4 }),
    s("text", { x: n.x, y: n.node.deferred ? n.y : n.y + 4, "text-anchor": "middle", class: "label" }, n.label));
    if (n.node.deferred) grp.append(s("text", { x: n.x, y: n.y + 14, "text-anchor": "middle", class: "tag" }, "deferred"));
    if (isNext) {
      grp.append(s("g", { class: "badge" },
        s("rect", { x: x + n.width - 30, y: y - 9, width: 34, height: 16, rx: 8 }),
        s("text", { x: x + n.width - 13, y: y + 3, "text-anchor": "middle" }, "next")));
    }
    svg.append(grp);
  }
  box.replaceChildren(svg);
  const nexts = [...nextSet];
  svg.querySelector("title").textContent +=
    `; taken: ${desc.join(", ") || "none"}; next: ${nexts.join(", ") || "none"}`;
}

// ---------------------------------------------------------------------------
// Timeline

function stepsById() {
  const m = new Map();
  for (const cp of state.thread?.timeline || []) m.set(cp.checkpoint_id, cp);
  return m;
}

function cpLabel(cp) {
  return `step ${cp.step} · ${cp.source}${cp.branch ? ` · branch ${cp.branch}` : ""}`;
}

function tasksTable(tasks) {
  if (!tasks || tasks.length === 0) return null;
  return h("table", { class: "tasks" },
    h("thead", {}, h("tr", {}, ...["task", "time", "attempts", "cache", "routed to", "wrote"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...tasks.map((t) => h("tr", { "data-task": t.node },
      h("td", {}, t.node, t.resumed ? " (resumed)" : "",
        t.error ? h("div", { class: "err" }, `✕ error: ${t.error}`) : null),
      h("td", {}, fmtDuration(t.duration_us)),
      h("td", {}, t.attempts > 1 ? `${t.attempts} (retried)` : String(t.attempts ?? 1)),
      h("td", {}, t.cached ? "hit" : "—"),
      h("td", {}, (t.routed_to || []).length ? `→ ${counted(t.routed_to)}` : "—"),
      h("td", {}, t.writes && Object.keys(t.writes).length
        ? h("details", {}, h("summary", {}, Object.keys(t.writes).join(", ")), jsonTree(t.writes, undefined, 0, 1))
        : "—")))));
}

function drawTimeline() {
  const ol = $("#timeline");
  const byId = stepsById();
  const tl = state.thread.timeline;
  const items = tl.map((cp, i) => {
    const prev = tl[i - 1];
    const forkedFrom = cp.parent_checkpoint_id && (!prev || prev.checkpoint_id !== cp.parent_checkpoint_id)
      ? byId.get(cp.parent_checkpoint_id) : null;
    const selected = cp.checkpoint_id === state.selected;
    const btn = h("button", {
      type: "button", class: "cp", tabindex: selected ? "0" : "-1",
      "aria-current": selected ? "true" : "false", "data-checkpoint": cp.checkpoint_id,
      "data-step": cp.step, "data-branch": cp.branch, "data-source": cp.source,
    },
    h("span", { class: "step" }, `step ${cp.step}`), " ",
    h("span", { class: "src" }, cp.source),
    cp.branch ? h("span", { class: "pill branch" }, `↳ branch ${cp.branch}`) : null,
    forkedFrom ? h("span", { class: "pill branch" }, `from step ${forkedFrom.step}`) : null,
    cp.interrupts && cp.interrupts.length ? h("span", { class: "pill interrupt" }, `‖ interrupt in ${cp.interrupts.map((x) => x.node).join(", ")}`) : null,
    (cp.next || []).length ? h("span", { class: "pill" }, `next: ${counted(cp.next)}`) : h("span", { class: "pill" }, "done"),
    h("span", { class: "muted" }, ` ${fmtTime(cp.created_at)}`));
    btn.addEventListener("click", () => select(cp.checkpoint_id, true));
    return h("li", {
      class: `${selected ? "selected" : ""}${cp.branch ? " on-branch" : ""}`,
      style: `--branch:${Math.min(cp.branch || 0, 4)}`,
    }, btn, tasksTable(cp.tasks));
  });
  ol.replaceChildren(...items);
  if (!state.selected && items.length) items[items.length - 1].querySelector(".cp").tabIndex = 0;
}

$("#timeline").addEventListener("keydown", (e) => {
  const buttons = [...$("#timeline").querySelectorAll(".cp")];
  const i = buttons.indexOf(document.activeElement);
  if (i < 0) return;
  let j = null;
  if (e.key === "ArrowDown" || e.key === "ArrowRight") j = Math.min(i + 1, buttons.length - 1);
  else if (e.key === "ArrowUp" || e.key === "ArrowLeft") j = Math.max(i - 1, 0);
  else if (e.key === "Home") j = 0;
  else if (e.key === "End") j = buttons.length - 1;
  else if (e.key === "Enter" || e.key === " ") {
    e.preventDefault();
    select(buttons[i].dataset.checkpoint, true);
    return;
  }
  if (j === null) return;
  e.preventDefault();
  buttons[i].tabIndex = -1;
  buttons[j].tabIndex = 0;
  buttons[j].focus();
});

/** Selects a checkpoint: URL, timeline, graph highlight, values, diff defaults. */
async function select(cid, push) {
  const tid = state.thread.thread_id;
  if (push) history.pushState(null, "", threadUrl(tid, cid));
  state.selected = cid;
  const focused = document.activeElement && document.activeElement.classList.contains("cp");
  drawTimeline();
  if (focused) $(`#timeline .cp[tabindex="0"]`)?.focus();
  const cp = stepsById().get(cid);
  drawGraph(state.thread.graph, state.thread.path, cp ? cp.next : []);
  try {
    const detail = await call(`${API}/threads/${encodeURIComponent(tid)}/checkpoints/${encodeURIComponent(cid)}`);
    if (state.selected !== cid) return;
    state.checkpoint = detail;
    showMessage("");
    $("#values-title").textContent = `Values at step ${detail.step}`;
    $("#values").replaceChildren(jsonTree(detail.values));
    $("#values-section").hidden = false;
    drawGraph(state.thread.graph, state.thread.path, detail.next);
  } catch (e) {
    state.checkpoint = null;
    $("#values-section").hidden = true;
    showMessage(e.message);
  }
  fillDiffSelects(cp);
  refreshDriveForms();
}

// ---------------------------------------------------------------------------
// Diff

function fillDiffSelects(cp) {
  const tl = state.thread.timeline;
  const opts = () => tl.map((c) => h("option", { value: c.checkpoint_id }, cpLabel(c)));
  const a = $("#diff-a");
  const b = $("#diff-b");
  a.replaceChildren(...opts());
  b.replaceChildren(...opts());
  if (cp) {
    b.value = cp.checkpoint_id;
    a.value = cp.parent_checkpoint_id || cp.checkpoint_id;
  }
}

$("#diff-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const tid = state.thread.thread_id;
  const from = $("#diff-a").value;
  const to = $("#diff-b").value;
  const out = $("#diff");
  try {
    const q = new URLSearchParams({ from, to });
    const data = await call(`${API}/threads/${encodeURIComponent(tid)}/diff?${q}`);
    if (!data.changes.length) {
      out.replaceChildren(h("p", { class: "muted", "data-empty": "true" }, "No differences."));
      return;
    }
    out.replaceChildren(h("table", { class: "diff-table" },
      h("caption", { class: "muted" }, `${data.changes.length} change${data.changes.length === 1 ? "" : "s"}`),
      h("thead", {}, h("tr", {}, ...["path", "kind", "before", "after"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...data.changes.map((c) => h("tr", { "data-path": c.path, "data-kind": c.kind },
        h("td", {}, c.path),
        h("td", { class: `kind-${c.kind}` }, c.kind),
        h("td", {}, c.before === null || c.before === undefined ? "" : short(c.before, 160)),
        h("td", {}, c.after === null || c.after === undefined ? "" : short(c.after, 160)))))));
  } catch (err) {
    out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
  }
});

// ---------------------------------------------------------------------------
// Driving

function formError(form, err) {
  const box = form.querySelector(".form-error");
  if (!err) {
    box.replaceChildren();
    return;
  }
  const lines = [h("div", {}, err.message)];
  for (const x of err.errors || []) lines.push(h("div", {}, `${x.path}: ${x.message}`));
  box.replaceChildren(...lines);
}

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpError(0, `${what} is not valid JSON: ${e.message}`);
  }
}

function latest() {
  // The timeline is oldest first: the newest checkpoint, which heads branch 0, is last.
  const tl = state.thread?.timeline || [];
  return tl[tl.length - 1];
}

function refreshDriveForms() {
  const drive = state.info && state.info.drive;
  $("#drive-section").hidden = !drive;
  if (!drive) return;
  const t = state.thread;
  $("#run-target").querySelector('option[value="this"]').disabled = !t;
  if (!t) $("#run-target").value = "new";
  $("#edit-form").hidden = !t;
  const last = t ? latest() : null;
  const pending = last && last.interrupts && last.interrupts.length ? last.interrupts : null;
  $("#resume-form").hidden = !pending;
  if (pending) $("#resume-pending").replaceChildren(...pending.map((i) => jsonTree({ node: i.node, value: i.value }, undefined, 0, 3)));
  if (t && t.graph) {
    const sel = $("#edit-as-node");
    const keep = sel.value;
    sel.replaceChildren(h("option", { value: "" }, "(none)"),
      ...t.graph.nodes.filter((n) => n.kind === "node" || n.kind === "subgraph").map((n) => h("option", { value: n.id }, n.id)));
    sel.value = keep;
  }
  if (t && t.graph_id) $("#run-graph").value = t.graph_id;
}

/** A random (v4) UUID; `crypto.randomUUID` needs a secure context, this does not. */
function newThreadId() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** The served graph that runs thread `t`: the one it recorded, else the one picked to run. */
function graphOf(t) {
  return t.graph_id || $("#run-graph").value;
}

async function loadGraphs() {
  try {
    const list = await call(`${ROOT}/assistants/search`, { limit: 100 });
    const ids = [...new Set(list.map((a) => a.graph_id || a.assistant_id))];
    $("#run-graph").replaceChildren(...ids.map((id) => h("option", { value: id }, id)));
    await showSchema();
  } catch (_) {
    /* the select stays empty; starting a run then says why */
  }
}

/** Shows the picked graph's input schema (the server checks input against it). */
async function showSchema() {
  const box = $("#run-schema");
  const graph = $("#run-graph").value;
  if (!graph) {
    box.hidden = true;
    return;
  }
  try {
    const schemas = await call(`${ROOT}/assistants/${encodeURIComponent(graph)}/schemas`);
    state.inputSchema = schemas.input_schema;
    state.inputSchemaOf = graph;
    box.querySelector(".json").replaceChildren(jsonTree(schemas.input_schema, undefined, 0, 1));
    box.hidden = !schemas.input_schema;
  } catch (_) {
    state.inputSchema = null;
    state.inputSchemaOf = null;
    box.hidden = true;
  }
}

$("#run-graph").addEventListener("change", showSchema);

/**
 * Refuses an input naming a field the graph's state lacks. The server drops such
 * keys (as LangGraph does, for clients that send more than a graph reads); typed
 * here by hand, it is a typo, so it is said before anything runs.
 */
function checkInputKeys(input) {
  const props = state.inputSchema && state.inputSchema.properties;
  if (!props || !input || typeof input !== "object" || Array.isArray(input)) return;
  const known = Object.keys(props);
  const unknown = Object.keys(input).filter((k) => !known.includes(k));
  if (!unknown.length) return;
  throw new HttpError(
    0,
    `the graph's state has no field ${unknown.map((k) => `\`${k}\``).join(", ")}`,
    unknown.map((k) => ({ path: `$.input.${k}`, message: `unknown field; the state's fields are: ${known.join(", ")}` })),
  );
}

/** Reads an SSE body from `fetch`, calling `onEvent(name, data)` per event. */
async function readSse(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  const flush = (block) => {
    let name = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return;
    let value = data.join("\n");
    try {
      value = JSON.parse(value);
    } catch (_) {
      /* keep the text */
    }
    onEvent(name, value);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let at;
    while ((at = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, at);
      buf = buf.slice(buf.slice(at).match(/^\r?\n\r?\n/)[0].length + at);
      flush(block);
    }
  }
  if (buf.trim()) flush(buf);
}

/** Streams a run on `tid` with `body` (input or command), logging every event live. */
async function streamRun(tid, body, form) {
  const status = $("#stream-status");
  const log = $("#stream");
  const graph = body.assistant_id;
  const res = await fetch(`${ROOT}/threads/${encodeURIComponent(tid)}/runs/stream`, {
    method: "POST",
    headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
    body: JSON.stringify({ stream_mode: ["values", "updates", "custom"], ...body }),
  });
  if (!res.ok) throw await failure(res);
  formError(form, null);
  log.replaceChildren();
  state.running = true;
  status.dataset.outcome = "running";
  status.dataset.live = "0"; // timeline refreshes shown while this run went on
  status.textContent = `running ${graph} on thread ${tid}…`;
  let ended = "finished";
  // Each superstep's `values` brings the timeline up to date (at most every 300 ms).
  let pending = null;
  const refreshSoon = () => {
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      openThread(tid, null, true, true);
    }, 300);
  };
  await readSse(res, (name, data) => {
    if (name === "error") ended = `failed: ${data && data.message ? data.message : short(data)}`;
    if (name === "updates" && data && data.__interrupt__) ended = "interrupted";
    if (name === "values") refreshSoon();
    log.append(h("li", { "data-event": name }, h("span", { class: "ev" }, name), " ", short(data, 200)));
    log.scrollTop = log.scrollHeight;
  });
  clearTimeout(pending);
  state.running = false;
  await loadThreads();
  await openThread(tid, null, true);
  // Said last, once the timeline shows the run's end.
  status.textContent = `run on thread ${tid} ${ended}`;
  status.dataset.outcome = ended.split(":")[0];
}

async function driveAction(form, fn) {
  const button = form.querySelector("button[type=submit]");
  if (button) button.disabled = true;
  try {
    formError(form, null);
    await fn();
  } catch (err) {
    formError(form, err);
  } finally {
    if (button) button.disabled = false;
  }
}

$("#run-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.target;
  driveAction(form, async () => {
    const input = parseJson($("#run-input").value, "the input");
    const graph = $("#run-graph").value;
    if (!graph) throw new HttpError(0, "no graph to run: this server serves none");
    if (state.inputSchemaOf !== graph) await showSchema();
    checkInputKeys(input);
    const body = { assistant_id: graph, input };
    let tid;
    if ($("#run-target").value === "this" && state.thread) {
      tid = state.thread.thread_id;
    } else {
      // The run creates the thread, so an input the server refuses leaves no empty
      // thread behind (a refused request writes nothing).
      tid = newThreadId();
      body.if_not_exists = "create";
    }
    await streamRun(tid, body, form);
  });
});

$("#resume-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.target;
  driveAction(form, async () => {
    const answer = parseJson($("#resume-input").value, "the answer");
    const t = state.thread;
    await streamRun(t.thread_id, { assistant_id: graphOf(t), command: { resume: answer } }, form);
  });
});

$("#edit-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.target;
  driveAction(form, async () => {
    const values = parseJson($("#edit-values").value, "the values");
    const body = { values };
    if ($("#edit-as-node").value) body.as_node = $("#edit-as-node").value;
    const tid = state.thread.thread_id;
    await call(`${ROOT}/threads/${encodeURIComponent(tid)}/state`, body);
    $("#stream-status").textContent = `state of thread ${tid} updated`;
    await openThread(tid, null, true);
  });
});

$("#fork-button").addEventListener("click", () => {
  const form = $("#edit-form");
  driveAction(form, async () => {
    const values = parseJson($("#edit-values").value, "the values");
    const t = state.thread;
    const cid = state.selected;
    if (!cid) throw new HttpError(0, "select the checkpoint to fork from in the timeline first");
    const body = { values, checkpoint_id: cid };
    if ($("#edit-as-node").value) body.as_node = $("#edit-as-node").value;
    await call(`${ROOT}/threads/${encodeURIComponent(t.thread_id)}/state`, body);
    await streamRun(t.thread_id, { assistant_id: graphOf(t), input: null }, form);
  });
});

// ---------------------------------------------------------------------------
// Views

function hideThreadViews() {
  for (const id of ["#thread-head", "#timeline-section", "#values-section", "#diff-section"]) $(id).hidden = true;
}

/** Loads and shows thread `tid`, selecting `cid` (or the latest checkpoint). */
/** Bumped by every `openThread`: a slower, older load then leaves the page alone. */
let loads = 0;

async function openThread(tid, cid, replaceUrl, quiet) {
  const load = ++loads;
  let t;
  try {
    t = await call(`${API}/threads/${encodeURIComponent(tid)}`);
    if (load !== loads) return;
    if (quiet) {
      const status = $("#stream-status");
      status.dataset.live = String(Number(status.dataset.live || 0) + 1);
    }
  } catch (e) {
    // A live refresh during a run says nothing (a new thread has no checkpoint yet).
    if (quiet || load !== loads) return;
    state.thread = null;
    hideThreadViews();
    $("#graph-section").hidden = true;
    showMessage(e.status === 404 ? `${e.message}. Pick a thread from the list.` : e.message);
    document.title = "not found · stategraph Studio";
    refreshDriveForms();
    return;
  }
  state.thread = t;
  showMessage("");
  document.title = `${t.thread_id} · stategraph Studio`;
  $("#thread-head").hidden = false;
  $("#thread-title").replaceChildren(`Thread ${t.thread_id} `, statusBadge(t.status));
  $("#thread-meta").textContent = [
    t.graph_id ? `graph ${t.graph_id}` : null,
    t.graph_version ? `version ${t.graph_version.slice(0, 12)}` : null,
    `${t.timeline.length} checkpoints`,
  ].filter(Boolean).join(" · ");
  $("#graph-section").hidden = false;
  $("#graph-title").textContent = t.graph_id ? `Graph ${t.graph_id}` : "Graph";
  $("#timeline-section").hidden = false;
  $("#diff-section").hidden = t.timeline.length === 0;
  $("#diff").replaceChildren();
  for (const a of document.querySelectorAll("#threads a")) {
    a.setAttribute("aria-current", a.dataset.thread === tid ? "page" : "false");
  }
  const known = stepsById();
  if (cid && !known.has(cid)) {
    // Ask the API, which says exactly what is missing.
    try {
      await call(`${API}/threads/${encodeURIComponent(tid)}/checkpoints/${encodeURIComponent(cid)}`);
    } catch (e) {
      state.selected = null;
      drawTimeline();
      drawGraph(t.graph, t.path, []);
      $("#values-section").hidden = true;
      showMessage(e.message);
      refreshDriveForms();
      return;
    }
  }
  const chosen = cid || latest()?.checkpoint_id;
  if (replaceUrl && chosen) history.replaceState(null, "", threadUrl(tid, cid || undefined));
  if (chosen) await select(chosen, false);
  else {
    state.selected = null;
    drawTimeline();
    drawGraph(t.graph, t.path, []);
    refreshDriveForms();
  }
}

async function render() {
  const r = route();
  if (r.thread !== undefined) {
    await openThread(r.thread, r.checkpoint, false);
    return;
  }
  // The overview: the newest thread's graph (no checkpoint selected).
  state.thread = null;
  state.selected = null;
  hideThreadViews();
  showMessage("");
  document.title = "stategraph Studio";
  for (const a of document.querySelectorAll("#threads a")) a.setAttribute("aria-current", "false");
  const first = document.querySelector("#threads a");
  if (!first) {
    $("#graph-section").hidden = true;
    refreshDriveForms();
    return;
  }
  try {
    const t = await call(`${API}/threads/${encodeURIComponent(first.dataset.thread)}`);
    $("#graph-section").hidden = false;
    $("#graph-title").textContent = `Graph ${t.graph_id || ""} (of the newest thread, ${t.thread_id})`;
    drawGraph(t.graph, [], []);
  } catch (e) {
    showMessage(e.message);
  }
  refreshDriveForms();
}

async function boot() {
  try {
    state.info = await call(`${API}/info`);
  } catch (e) {
    if (e.status !== 401 && e.status !== 403) showMessage(`the Studio API did not answer: ${e.message}`);
    return;
  }
  const info = state.info;
  $("#source").textContent = `${info.mode === "served" ? "served" : "stored"}: ${info.source}${info.drive ? " · driving enabled" : " · read-only"}`;
  if (info.drive) await loadGraphs();
  await loadThreads();
  await render();
  document.body.dataset.ready = "true";
}

boot();
