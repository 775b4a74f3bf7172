// torchx dashboard: a small hash-routed page over the JSON API.
// Everything a job controls goes into the page through text nodes (el() below): never as HTML.
"use strict";

const FINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN"]);
const STATES = ["UNSUBMITTED", "SUBMITTED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN"];
const MAX_LOG_LINES = 10000;
const PAGE = 50;
const SVG = "http://www.w3.org/2000/svg";

let config = { read_only: true, schedulers: [], sweeps: false };
let cleanup = [];  // what the current view must stop when the page changes (timers, streams)

// ---------------------------------------------------------------- helpers
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") { for (const [k, v] of Object.entries(value)) if (v !== undefined && v !== null) node.dataset[k] = v; }
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function badge(state) {
  return el("span", { class: "state state-" + String(state).replace(/[^A-Z_]/g, "") }, state);
}

function jobHref(handle) {
  return "#/job/" + encodeURIComponent(handle);
}

function apiJob(handle, suffix) {
  return "/api/jobs/" + encodeURIComponent(handle) + (suffix || "");
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text }; }
  if (!response.ok) {
    const error = new Error((body && body.error) || response.status + " " + response.statusText);
    error.status = response.status;
    throw error;
  }
  return body;
}

function show(...nodes) {
  const view = document.getElementById("view");
  view.replaceChildren(...nodes);
}

function errorBox(message) {
  return el("div", { class: "errors", role: "alert" }, el("div", {}, message));
}

function hashParams() {
  const hash = location.hash.slice(1);
  const q = hash.indexOf("?");
  return [q < 0 ? hash : hash.slice(0, q), new URLSearchParams(q < 0 ? "" : hash.slice(q + 1))];
}

function every(ms, fn) {
  const id = setInterval(fn, ms);
  cleanup.push(() => clearInterval(id));
}

function isHttp(url) {
  try { return ["http:", "https:"].includes(new URL(url).protocol); } catch (e) { return false; }
}

// a job's time (seconds since the epoch) as local date and time; "" when unknown
function when(seconds) {
  if (typeof seconds !== "number") return "";
  const d = new Date(seconds * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// how long a job ran: from its start to its end (or to now while it runs); "" when it has not started
function duration(job) {
  if (typeof job.started !== "number") return "";
  const end = typeof job.ended === "number" ? job.ended : Date.now() / 1000;
  const total = Math.max(0, Math.round(end - job.started));
  const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), sec = total % 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${sec}s` : `${sec}s`;
}

function fmt(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// ---------------------------------------------------------------- jobs table
function renderJobs(params) {
  const scheduler = el("select", { id: "f-scheduler", "aria-label": "scheduler" },
    el("option", { value: "" }, "all schedulers"),
    config.schedulers.map((s) => el("option", { value: s, selected: params.get("scheduler") === s }, s)));
  const state = el("select", { id: "f-state", "aria-label": "state" },
    el("option", { value: "" }, "any state"),
    STATES.map((s) => el("option", { value: s, selected: params.get("state") === s }, s)));
  const text = el("input", { id: "f-q", type: "search", placeholder: "filter by name or handle", value: params.get("q") || "" });
  const errors = el("div", { id: "list-errors" });
  const body = el("tbody", { id: "jobs-body" });
  const summary = el("span", { class: "muted", id: "jobs-summary" });
  const pager = el("div", { class: "pager" });
  const sort = params.get("sort") || "";
  const expanded = new Set();  // handles whose nested jobs are shown
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);

  const go = (changes) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) { if (v === "" || v === null) next.delete(k); else next.set(k, v); }
    location.hash = "#/?" + next.toString();
  };
  scheduler.addEventListener("change", () => go({ scheduler: scheduler.value, offset: "" }));
  state.addEventListener("change", () => go({ state: state.value, offset: "" }));
  let typing = null;
  text.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => go({ q: text.value, offset: "" }), 300); });

  const header = (key, label) => {
    const mark = sort === key ? " \u25B2" : sort === "-" + key ? " \u25BC" : "";
    return el("th", { class: "sortable", dataset: { sort: key }, onclick: () => go({ sort: sort === key ? "-" + key : key, offset: "" }) }, label + mark);
  };
  const table = el("table", { id: "jobs" },
    el("thead", {}, el("tr", {}, header("name", "Name"), header("state", "State"), header("scheduler", "Scheduler"),
      header("submitted", "Submitted"), el("th", {}, "Duration"), header("handle", "Handle"))),
    body);

  async function load() {
    const query = new URLSearchParams();
    for (const key of ["scheduler", "state", "q", "sort"]) if (params.get(key)) query.set(key, params.get(key));
    query.set("offset", String(offset));
    query.set("limit", String(PAGE));
    let data;
    try {
      data = await api("/api/jobs?" + query.toString());
    } catch (e) {
      errors.replaceChildren(errorBox(e.message));
      return;
    }
    errors.replaceChildren(...data.errors.map((x) => errorBox(x.scheduler + ": " + x.error)));
    // a managed job's attempts and a sweep's trials are nested rows, shown when their row is expanded
    const rows = (job, depth, parent) => {
      const kids = job.children || [];
      const open = expanded.has(job.handle);
      const toggle = kids.length ? el("button", {
        class: "toggle", "aria-expanded": open ? "true" : "false", title: (open ? "hide " : "show ") + kids.length + " nested",
        onclick: () => { if (open) expanded.delete(job.handle); else expanded.add(job.handle); load(); },
      }, (open ? "\u25BE " : "\u25B8 ") + kids.length) : null;
      const href = job.kind === "sweep" ? "#/sweep/" + encodeURIComponent(job.app_id) : jobHref(job.handle);
      const row = el("tr", { dataset: { handle: job.handle, parent: parent, kind: job.kind }, class: depth ? "nested" : null },
        el("td", { style: depth ? "padding-left:" + (0.6 + 1.6 * depth) + "em" : null }, toggle, el("a", { href: href }, job.name || job.app_id)),
        el("td", {}, badge(job.state)),
        el("td", {}, job.scheduler),
        el("td", { class: "time" }, when(job.submitted)),
        el("td", { class: "time" }, duration(job)),
        el("td", { class: "handle" }, job.handle));
      return [row, ...(open ? kids.flatMap((k) => rows(k, depth + 1, job.handle)) : [])];
    };
    body.replaceChildren(...data.jobs.flatMap((job) => rows(job, 0, null)));
    if (!data.jobs.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "no jobs")));
    const last = Math.min(data.offset + data.jobs.length, data.total);
    summary.textContent = data.total ? `${data.offset + 1}\u2013${last} of ${data.total} jobs` : "";
    pager.replaceChildren(
      el("button", { disabled: data.offset <= 0, onclick: () => go({ offset: String(Math.max(0, offset - PAGE)) }) }, "\u2190 newer"),
      summary,
      el("button", { disabled: last >= data.total, onclick: () => go({ offset: String(offset + PAGE) }) }, "older \u2192"));
  }

  show(el("h1", {}, "Jobs"),
    el("div", { class: "controls" }, scheduler, state, text, el("button", { onclick: load }, "Refresh")),
    errors, table, pager);
  load();
  every(5000, load);
}

// ---------------------------------------------------------------- one job
function renderJob(handle) {
  const head = el("div", {});
  const details = el("div", {});
  const logs = el("section", {}, el("h2", {}, "Log"));
  show(el("p", {}, el("a", { href: "#/" }, "\u2190 all jobs")), head, details, logs);
  let job = null;
  let logsBuilt = false;

  async function load() {
    try {
      const fresh = await api(apiJob(handle) + (job ? "?request=0" : ""));  // the request does not change
      if (job) Object.assign(fresh, { request: job.request, request_error: job.request_error });
      job = fresh;
    } catch (e) {
      head.replaceChildren(el("h1", {}, handle), errorBox(e.message));
      return;
    }
    head.replaceChildren(
      el("h1", { id: "job-title" }, job.handle, " ", badge(job.state)),
      job.msg ? el("p", { id: "job-msg" }, job.msg) : "",
      job.structured_error_msg ? el("pre", {}, job.structured_error_msg) : "",
      actions(job, load));
    details.replaceChildren(...jobDetails(job));
    if (!logsBuilt && job.logs) { logsBuilt = true; buildLogView(logs, job); }
    if (!job.logs) logs.replaceChildren(el("h2", {}, "Log"), el("p", { class: "muted" }, "this scheduler keeps no logs torchx can read"));
    if (FINAL.has(job.state)) stopRefresh();
  }
  const id = setInterval(load, 3000);
  const stopRefresh = () => clearInterval(id);
  cleanup.push(stopRefresh);
  load();
}

function actions(job, reload) {
  if (!job.can_cancel && !job.can_delete) return "";
  const out = el("div", { class: "actions" });
  const act = async (what, method, suffix) => {
    if (!confirm(`${what} ${job.handle}?`)) return;
    try {
      await api(apiJob(job.handle, suffix), { method: method });
      if (what === "Delete") location.hash = "#/";
      else reload();  // the log stream goes on and reports the end
    } catch (e) {
      out.append(errorBox(`${what} failed: ${e.message}`));
    }
  };
  if (job.can_cancel && !FINAL.has(job.state)) out.append(el("button", { class: "danger", id: "cancel", onclick: () => act("Cancel", "POST", "/cancel") }, "Cancel"));
  if (job.can_delete) out.append(el("button", { class: "danger", id: "delete", onclick: () => act("Delete", "DELETE", "") }, "Delete"));
  return out;
}

function resourceText(res) {
  const parts = [];
  if (res.cpu >= 0) parts.push(`cpu ${res.cpu}`);
  if (res.gpu >= 0) parts.push(`gpu ${res.gpu}`);
  if (res.memMB >= 0) parts.push(`${res.memMB} MB`);
  return parts.length ? parts.join(", ") : "not set";
}

function jobDetails(job) {
  const out = [];
  const facts = el("dl", { class: "kv" },
    el("dt", {}, "scheduler"), el("dd", {}, job.scheduler),
    el("dt", {}, "app id"), el("dd", {}, job.app_id),
    el("dt", {}, "restarts"), el("dd", {}, job.num_restarts));
  if (job.ui_url) {
    facts.append(el("dt", {}, "scheduler link"),
      el("dd", {}, isHttp(job.ui_url) ? el("a", { href: job.ui_url, target: "_blank", rel: "noopener noreferrer", id: "ui-url" }, job.ui_url) : el("span", { id: "ui-url" }, job.ui_url)));
  }
  for (const [key, value] of Object.entries(job.metadata || {})) facts.append(el("dt", {}, key), el("dd", {}, fmt(value)));
  out.push(facts);

  out.push(el("h2", {}, "Replicas"));
  const rows = [];
  for (const role of job.roles) {
    for (const r of role.replicas) {
      rows.push(el("tr", { dataset: { role: role.name, replica: r.id } },
        el("td", {}, role.name), el("td", {}, r.id), el("td", {}, badge(r.state)), el("td", {}, r.hostname || ""), el("td", {}, r.error || "")));
    }
  }
  out.push(el("table", { id: "replicas" },
    el("thead", {}, el("tr", {}, ["Role", "Replica", "State", "Host", "Error"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 5, class: "muted" }, "no replica states reported")))));

  const roleRows = job.roles.filter((r) => r.entrypoint !== undefined).map((r) => el("tr", {},
    el("td", {}, r.name), el("td", { class: "handle" }, r.image), el("td", { class: "handle" }, [r.entrypoint, ...r.args].join(" ")),
    el("td", {}, r.num_replicas), el("td", {}, resourceText(r.resource))));
  if (roleRows.length) {
    out.push(el("h2", {}, "Roles"), el("table", { id: "roles" },
      el("thead", {}, el("tr", {}, ["Role", "Image", "Command", "Replicas", "Resource"].map((h) => el("th", {}, h)))),
      el("tbody", {}, roleRows)));
  }

  if (job.attempts && job.attempts.length) {
    // attempts count from 0, as TORCHX_ATTEMPT does; started/ended (seconds since the epoch) as local times
    const preferred = ["attempt", "handle", "scheduler", "state", "cause", "exit_code", "started", "ended"];
    const seen = new Set(["attempt", ...job.attempts.flatMap((a) => (a && typeof a === "object" ? Object.keys(a) : []))]);
    const keys = [...preferred.filter((k) => seen.has(k)), ...[...seen].filter((k) => !preferred.includes(k)).sort()];
    const cell = (a, i, k) => {
      if (k === "attempt") return el("td", {}, typeof a.attempt === "number" ? a.attempt : i);
      if (k === "handle" && a.handle) return el("td", {}, el("a", { href: jobHref(a.handle) }, a.handle));
      if (k === "state" && a.state) return el("td", {}, badge(a.state));
      if ((k === "started" || k === "ended") && typeof a[k] === "number") return el("td", { class: "time", title: String(a[k]) }, when(a[k]));
      return el("td", {}, fmt(a[k]));
    };
    out.push(el("h2", {}, "Attempts"), el("table", { id: "attempts" },
      el("thead", {}, el("tr", {}, keys.map((k) => el("th", {}, k)))),
      el("tbody", {}, job.attempts.map((a, i) => el("tr", {}, keys.map((k) => cell(a, i, k)))))));
  }

  if (job.tracker) {
    out.push(el("h2", {}, "Tracker"));
    const meta = Object.entries(job.tracker.metadata || {});
    out.push(meta.length ? el("dl", { class: "kv", id: "tracker-metadata" }, meta.map(([k, v]) => [el("dt", {}, k), el("dd", {}, fmt(v))]))
      : el("p", { class: "muted" }, "no metadata recorded"));
    if (job.tracker.artifacts.length) {
      out.push(el("table", { id: "artifacts" },
        el("thead", {}, el("tr", {}, ["Artifact", "Path", "Metadata"].map((h) => el("th", {}, h)))),
        el("tbody", {}, job.tracker.artifacts.map((a) => el("tr", {}, el("td", {}, a.name), el("td", { class: "handle" }, a.path), el("td", {}, fmt(a.metadata)))))));
    }
    for (const e of job.tracker.errors || []) out.push(errorBox(e));
  }

  out.push(el("h2", {}, "Request"), el("p", { class: "muted" }, "what the job's roles submit to " + job.scheduler + " (a dry run of its description)"));
  out.push(job.request ? el("pre", { id: "request" }, job.request) : el("p", { class: "muted" }, job.request_error || "no request"));
  return out;
}

function buildLogView(section, job) {
  const roles = job.roles.map((r) => r.name);
  const role = el("select", { id: "log-role", "aria-label": "role" }, roles.map((r) => el("option", { value: r }, r)));
  const replica = el("select", { id: "log-replica", "aria-label": "replica" });
  const fillReplicas = () => {
    const r = job.roles.find((x) => x.name === role.value);
    const count = Math.max(r ? (r.num_replicas || r.replicas.length) : 1, 1);
    replica.replaceChildren(...Array.from({ length: count }, (_, i) => el("option", { value: i }, "replica " + i)));
  };
  fillReplicas();
  const regex = el("input", { id: "log-regex", type: "search", placeholder: "regex filter" });
  const follow = el("input", { id: "log-follow", type: "checkbox", checked: !FINAL.has(job.state) && job.log_tail });
  const status = el("span", { class: "muted", id: "log-status" });
  const pre = el("pre", { class: "log", id: "log" });
  let source = null;
  let pending = [];
  let flushing = false;

  const append = (lines) => {
    pending.push(...lines);
    if (flushing) return;
    flushing = true;
    requestAnimationFrame(() => {
      flushing = false;
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 20;
      pre.append(document.createTextNode(pending.join("\n") + "\n"));
      pending = [];
      if (pre.childNodes.length > 200) {  // keep the DOM small: one text node, the last MAX_LOG_LINES lines
        const all = pre.textContent.split("\n");
        pre.textContent = all.slice(Math.max(0, all.length - MAX_LOG_LINES - 1)).join("\n");
      }
      if (atBottom) pre.scrollTop = pre.scrollHeight;
    });
  };

  const stop = () => { if (source) { source.close(); source = null; } };
  cleanup.push(stop);

  async function start() {
    stop();
    pre.textContent = "";
    pending = [];
    const query = new URLSearchParams({ role: role.value, replica: replica.value });
    if (regex.value) query.set("regex", regex.value);
    if (follow.checked) {
      query.set("follow", "1");
      status.textContent = "following\u2026";
      source = new EventSource(apiJob(job.handle, "/logs?" + query.toString()));
      source.onmessage = (ev) => append([JSON.parse(ev.data).line]);
      source.addEventListener("end", (ev) => { status.textContent = "job ended: " + JSON.parse(ev.data).state; stop(); });
      source.addEventListener("error", (ev) => {
        if (ev.data) { status.textContent = "error: " + JSON.parse(ev.data).error; stop(); return; }
        if (source && source.readyState === EventSource.CLOSED) { stop(); showPlain(query); }
      });
    } else {
      showPlain(query);
    }
  }

  async function showPlain(query) {
    query.delete("follow");
    status.textContent = "loading\u2026";
    const response = await fetch(apiJob(job.handle, "/logs?" + query.toString()), { credentials: "same-origin" });
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try { message = JSON.parse(text).error; } catch (e) { /* plain text */ }
      status.textContent = "error: " + message;
      return;
    }
    pre.textContent = text;
    status.textContent = "";
  }

  role.addEventListener("change", () => { fillReplicas(); start(); });
  replica.addEventListener("change", start);
  follow.addEventListener("change", start);
  let typing = null;
  regex.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(start, 400); });
  section.replaceChildren(el("h2", {}, "Log"),
    el("div", { class: "controls" }, role, replica, regex,
      job.log_tail ? el("label", {}, follow, " follow") : "", status), pre);
  start();
}

// ---------------------------------------------------------------- sweeps
async function renderSweeps() {
  show(el("h1", {}, "Sweeps"), el("p", { class: "muted" }, "loading\u2026"));
  let data;
  try { data = await api("/api/sweeps"); } catch (e) { show(el("h1", {}, "Sweeps"), errorBox(e.message)); return; }
  const rows = data.sweeps.map((s) => el("tr", {},
    el("td", {}, el("a", { href: "#/sweep/" + encodeURIComponent(s.id) }, s.id)),
    el("td", {}, badge(s.state)), el("td", {}, s.component || ""), el("td", {}, s.scheduler || ""),
    el("td", {}, s.mode || ""), el("td", {}, s.trials === undefined ? "" : s.trials),
    el("td", {}, s.error || Object.entries(s.states || {}).map(([k, v]) => `${v} ${k}`).join(", "))));
  show(el("h1", {}, "Sweeps"), el("table", { id: "sweeps" },
    el("thead", {}, el("tr", {}, ["Sweep", "State", "Component", "Scheduler", "Mode", "Trials", "Trial states"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 7, class: "muted" }, "no sweeps")))));
}

async function renderSweep(id, params) {
  show(el("p", {}, el("a", { href: "#/sweeps" }, "\u2190 all sweeps")), el("h1", {}, id));
  let s;
  try { s = await api("/api/sweeps/" + encodeURIComponent(id)); } catch (e) {
    show(el("p", {}, el("a", { href: "#/sweeps" }, "\u2190 all sweeps")), el("h1", {}, id), errorBox(e.message));
    return;
  }
  const metric = params.get("metric") && s.metric_names.includes(params.get("metric")) ? params.get("metric") : s.metric_names[0];
  const select = el("select", { id: "metric", "aria-label": "metric" }, s.metric_names.map((m) => el("option", { value: m, selected: m === metric }, m)));
  select.addEventListener("change", () => { location.hash = "#/sweep/" + encodeURIComponent(id) + "?metric=" + encodeURIComponent(select.value); });
  const trials = el("table", { id: "trials" },
    el("thead", {}, el("tr", {}, el("th", {}, "#"), s.params.map((p) => el("th", {}, p)), el("th", {}, "State"),
      s.metric_names.map((m) => el("th", {}, m)), el("th", {}, "Job"))),
    el("tbody", {}, s.trials.map((t) => el("tr", {},
      el("td", {}, t.index), s.params.map((p) => el("td", {}, fmt(t.args[p]))), el("td", {}, badge(t.state)),
      s.metric_names.map((m) => el("td", {}, t.metrics[m] === undefined ? "" : t.metrics[m])),
      el("td", { class: "handle" }, t.handle ? el("a", { href: jobHref(t.handle) }, t.handle) : t.msg || "")))));
  const plots = el("div", { class: "plots", id: "plots" });
  if (metric) for (const p of s.params) plots.append(plot(s.trials, p, metric));
  show(el("p", {}, el("a", { href: "#/sweeps" }, "\u2190 all sweeps")),
    el("h1", {}, s.handle, " ", badge(s.state)),
    el("dl", { class: "kv" }, el("dt", {}, "component"), el("dd", {}, s.component), el("dt", {}, "scheduler"), el("dd", {}, s.scheduler),
      el("dt", {}, "mode"), el("dd", {}, s.mode), s.driver ? [el("dt", {}, "driver"), el("dd", {}, s.driver)] : ""),
    el("h2", {}, "Trials"), trials,
    el("h2", {}, "Metric against each parameter"),
    metric ? el("div", { class: "controls" }, el("label", { for: "metric" }, "metric"), select)
      : el("p", { class: "muted" }, "no trial recorded a number in the tracker yet (AppRun.add_metadata(loss=...))"),
    plots);
}

// A scatter plot of ``metric`` against parameter ``param`` (numeric axis if every value is a number, else categories).
function plot(trials, param, metric) {
  const W = 360, H = 260, L = 56, R = 12, T = 26, B = 40;
  const points = trials.filter((t) => t.metrics[metric] !== undefined && t.args[param] !== undefined)
    .map((t) => ({ x: t.args[param], y: t.metrics[metric], t: t }));
  const root = svg("svg", { class: "plot", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${metric} against ${param}` });
  root.append(svg("text", { x: W / 2, y: 16, "text-anchor": "middle", class: "title" }, `${metric} vs ${param}`));
  if (!points.length) { root.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no data")); return root; }
  const numeric = points.every((p) => p.x !== "" && isFinite(Number(p.x)));
  const cats = numeric ? [] : [...new Set(points.map((p) => String(p.x)))];
  const xs = numeric ? points.map((p) => Number(p.x)) : points.map((p) => cats.indexOf(String(p.x)));
  const ys = points.map((p) => p.y);
  const span = (lo, hi) => (hi - lo) || Math.abs(hi) || 1;
  let [x0, x1] = numeric ? [Math.min(...xs), Math.max(...xs)] : [-0.5, cats.length - 0.5];
  if (numeric) { const pad = span(x0, x1) * 0.06; x0 -= pad; x1 += pad; }
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const ypad = span(y0, y1) * 0.08; y0 -= ypad; y1 += ypad;
  const sx = (v) => L + (v - x0) / (x1 - x0) * (W - L - R);
  const sy = (v) => H - B - (v - y0) / (y1 - y0) * (H - T - B);
  const short = (v) => Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0) ? v.toExponential(1) : String(+v.toFixed(2));
  for (const yv of niceTicks(y0, y1)) {
    root.append(svg("line", { x1: L, x2: W - R, y1: sy(yv), y2: sy(yv), class: "grid" }));
    root.append(svg("text", { x: L - 4, y: sy(yv) + 4, "text-anchor": "end" }, short(yv)));
  }
  const distinct = [...new Set(xs)].sort((a, b) => a - b);
  const ticks = !numeric ? cats.map((_, i) => i) : distinct.length <= 8 ? distinct : niceTicks(x0, x1);
  for (const xv of ticks) {
    root.append(svg("text", { x: sx(xv), y: H - B + 14, "text-anchor": "middle" }, numeric ? short(xv) : cats[xv]));
  }
  root.append(svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
  root.append(svg("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
  root.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, param));
  root.append(svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` }, metric));
  const best = Math.min(...ys);
  points.forEach((p, i) => {
    const dot = svg("circle", { cx: sx(xs[i]), cy: sy(p.y), r: 5, class: p.y === best ? "best" : "" });
    dot.append(svg("title", {}, `trial ${p.t.index}: ${param}=${p.x}, ${metric}=${p.y}`));
    root.append(dot);
  });
  return root;
}

// Round tick values (steps of 1, 2 or 5 times a power of ten) inside [lo, hi], about five of them.
function niceTicks(lo, hi) {
  const raw = (hi - lo) / 5;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(12));
  return out;
}

// ---------------------------------------------------------------- routing
function route() {
  for (const stop of cleanup.splice(0)) stop();
  const [path, params] = hashParams();
  if (path.startsWith("/job/")) renderJob(decodeURIComponent(path.slice(5)));
  else if (path === "/sweeps" && config.sweeps) renderSweeps();
  else if (path.startsWith("/sweep/") && config.sweeps) renderSweep(decodeURIComponent(path.slice(7)), params);
  else renderJobs(params);
}

async function main() {
  try {
    config = await api("/api/config");
  } catch (e) {
    show(errorBox("cannot reach the dashboard's API: " + e.message));
    return;
  }
  document.getElementById("nav-sweeps").hidden = !config.sweeps;
  document.getElementById("mode").textContent = config.read_only ? "read-only" : "";
  window.addEventListener("hashchange", route);
  route();
}

main();
