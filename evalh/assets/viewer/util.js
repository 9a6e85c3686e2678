// evalh viewer: shared helpers. Hand-written, no build step, no dependency.
// Every piece of data reaches the page through textContent (el() below), never as markup:
// outputs, vars and reasons are untrusted text.
"use strict";

const EV = {};

// el("td", {class: "x", title: "t", onclick: fn}, "text", childNode, ...): a DOM node, text as text.
EV.el = function (tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name in node && typeof node[name] === "boolean") node[name] = Boolean(value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
};

EV.clear = function (node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
};

EV.score = (value) => (typeof value === "number" ? value.toFixed(2) : "–");
EV.percent = (value) => (typeof value === "number" ? value.toFixed(1) + "%" : "–");
EV.ms = (value) => (value >= 1000 ? (value / 1000).toFixed(2) + " s" : Math.round(value) + " ms");
EV.cost = (value) => (value ? "$" + value.toFixed(value < 0.01 ? 6 : 4) : "$0");
EV.clip = (text, limit) => (text.length > limit ? text.slice(0, limit - 1) + "…" : text);
EV.when = (stamp) => (stamp ? String(stamp).replace("T", " ").replace(/\.\d+/, "").replace(/(Z|[+]00:00)$/, " UTC") : "");

EV.statusBadge = (status) => EV.el("span", {class: "badge " + status}, status);

EV.varsText = function (vars) {
  return Object.entries(vars).map(([name, value]) => name + ": " + value).join("\n");
};

// The data: inlined in the HTML report (<script type="application/json" id="evalh-data">), else the
// local server's read-only API.
EV.inlined = function () {
  const node = document.getElementById("evalh-data");
  if (!node) return null;
  if (!EV._inlined) EV._inlined = JSON.parse(node.textContent);
  return EV._inlined;
};

EV.api = async function (path) {
  const response = await fetch(path, {headers: {Accept: "application/json"}});
  const body = await response.json().catch(() => ({error: response.statusText}));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
};

// The data leaves out values equal to their default (evalh/reports/viewdata.py); put them back once.
EV.NO_TOKENS = Object.freeze({total: 0, prompt: 0, completion: 0, cached: 0});
EV.CELL_DEFAULTS = {reason: "", error: null, prompt: "", latencyMs: 0, cost: 0, cached: false,
  namedScores: Object.freeze({}), tokens: EV.NO_TOKENS, gradingTokens: EV.NO_TOKENS, assertions: []};
EV.ASSERTION_DEFAULTS = {pass: false, error: false, skipped: false, score: null, threshold: null, weight: 1, metric: null,
  value: null, reason: "", depth: 0, judge: null, tokens: null};

EV.withDefaults = function (item, defaults) {
  for (const key in defaults) if (!(key in item)) item[key] = defaults[key];
  return item;
};

// A cell with its defaults put back, on first use: filling 10,000 cells up front would cost more than
// drawing a page of them.
EV.full = function (cell) {
  if (!cell.filled) {
    EV.withDefaults(cell, EV.CELL_DEFAULTS);
    for (const assertion of cell.assertions) EV.withDefaults(assertion, EV.ASSERTION_DEFAULTS);
    cell.filled = true;
  }
  return cell;
};

// A run's data: the HTML report's whole, or the server's first page of lines (see EV.loadRest).
EV.FIRST_LINES = 250;
EV.MORE_LINES = 5000;
EV.runLines = (ref, offset, limit) =>
  EV.api("/api/runs/" + encodeURIComponent(ref) + "?offset=" + offset + "&limit=" + limit);

EV.loadRun = function (ref) {
  const inlined = EV.inlined();
  return inlined ? Promise.resolve(inlined.view) : EV.runLines(ref, 0, EV.FIRST_LINES);
};

// The lines after the first page, fetched in the background; onmore() after each batch. Stops when
// the page is left (alive() false) or a batch brings nothing.
EV.loadRest = async function (ref, view, alive, onmore) {
  while (view.total !== undefined && view.lines.length < view.total && alive()) {
    const more = await EV.runLines(ref, view.lines.length, EV.MORE_LINES);
    if (!more.lines.length || !alive()) break;
    for (const line of more.lines) view.lines.push(line);
    onmore();
  }
};

// A numbered pager: "Rows 1–50 of 812", Previous / Next, page size. onchange(page, size) redraws.
EV.pager = function (state, total, onchange) {
  const pages = Math.max(1, Math.ceil(total / state.size));
  state.page = Math.min(state.page, pages - 1);
  const first = total ? state.page * state.size + 1 : 0;
  const last = Math.min(total, (state.page + 1) * state.size);
  const sizes = [50, 100, 250, 1000].map((n) => EV.el("option", {value: n, selected: n === state.size}, n));
  return EV.el(
    "div",
    {class: "pager"},
    EV.el("span", {class: "range"}, `Rows ${first}–${last} of ${total}`),
    EV.el("button", {type: "button", class: "prev", disabled: state.page === 0,
      onclick: () => onchange(state.page - 1, state.size)}, "‹ Previous"),
    EV.el("span", {class: "pageno"}, `Page ${state.page + 1} of ${pages}`),
    EV.el("button", {type: "button", class: "next", disabled: state.page >= pages - 1,
      onclick: () => onchange(state.page + 1, state.size)}, "Next ›"),
    EV.el("label", {}, "Per page ",
      EV.el("select", {class: "pagesize", onchange: (e) => onchange(0, Number(e.target.value))}, sizes)),
  );
};

EV.showError = function (root, error) {
  EV.clear(root).append(EV.el("p", {class: "error", role: "alert"}, String(error.message || error)));
};
