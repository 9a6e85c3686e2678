// A traced result's spans as a timeline in its detail panel (issue 26): one bar per span on the trace's
// time axis, nested under its parent, with its name, duration and status (error spans marked); a tool
// span shows its tool's name and arguments; a span opens (click) onto its attributes. The spans come as
// the JSON report holds them (cell.trace: {traceId, spans, dropped}, evalh/reports/viewdata.py) and can be
// downloaded as they are. Span names and attributes come from the agent's code: text, never markup.
//
// It extends detail.js's EV.openDetail rather than changing it, so that the HTML report of a run without
// traces, which inlines this file only when a row has a trace, stays byte for byte what it was.
"use strict";

// The attributes promptfoo reads a tool call from (src/assertions/trajectoryUtils.ts), first found wins.
EV.TOOL_NAME_KEYS = ["tool.name", "gen_ai.tool.name", "tool_name", "function.name", "agent.tool", "tool"];
EV.TOOL_ARGUMENT_KEYS = ["tool.arguments", "gen_ai.tool.call.arguments", "tool.args", "tool.input",
  "function.arguments", "arguments", "args", "input"];
EV.MAX_SPAN_DEPTH = 12; // deeper spans are drawn at this indent (their parent still says where they sit)
EV.SPANS_AT_ONCE = 500; // spans drawn when the details open, then as many more per "Show more" click

EV.attributeText = (value) => (typeof value === "string" ? value : JSON.stringify(value));

EV.firstAttribute = function (attributes, keys) {
  for (const key of keys) {
    const value = attributes[key];
    if (value !== undefined && value !== null && value !== "") return value;
  }
  return null;
};

// The tool call a span records ({name, args}: args pretty-printed JSON when it parses), or null.
EV.spanTool = function (span) {
  const attributes = span.attributes || {};
  const name = EV.firstAttribute(attributes, EV.TOOL_NAME_KEYS);
  if (name === null || typeof name === "object") return null;
  let args = EV.firstAttribute(attributes, EV.TOOL_ARGUMENT_KEYS);
  if (typeof args === "string") {
    try { args = JSON.parse(args); } catch (_) { /* not JSON: shown as it came */ }
  }
  const text = args === null ? "" : typeof args === "string" ? args : JSON.stringify(args, null, 2);
  return {name: String(name), args: text};
};

// The spans in timeline order: each root (no parent in this trace) by start time, each followed by its
// children, depth first. A span is placed once even if the parent links loop.
EV.spanOrder = function (spans) {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    const parent = span.parentSpanId;
    if (parent && ids.has(parent) && parent !== span.spanId) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(span);
    } else roots.push(span);
  }
  const byStart = (a, b) => (a.startTime || 0) - (b.startTime || 0);
  const placed = new Set();
  const out = [];
  const stack = roots.sort(byStart).reverse().map((span) => [span, 0]);
  while (stack.length) {
    const [span, depth] = stack.pop();
    if (placed.has(span)) continue;
    placed.add(span);
    out.push({span, depth});
    const kids = (children.get(span.spanId) || []).slice().sort(byStart).reverse();
    for (const kid of kids) stack.push([kid, depth + 1]);
  }
  for (const span of spans) if (!placed.has(span)) out.push({span, depth: 0}); // a loop's members
  return out;
};

EV.spanMs = (value) => (value === null || value === undefined ? "not ended"
  : value < 1 ? value.toFixed(2) + " ms" : value < 1000 ? value.toFixed(1) + " ms" : EV.ms(value));

EV.spanDetails = function (span, start, tool) {
  const status = span.status || {};
  const facts = [
    ["Span", span.spanId || ""], ["Parent", span.parentSpanId || "(root)"], ["Kind", span.kind || ""],
    ["Service", span.service || ""], ["Starts at", "+" + EV.spanMs((span.startTime || 0) - start)],
    ["Duration", EV.spanMs(span.durationMs)],
    ["Status", (status.code || "UNSET") + (status.message ? ": " + status.message : "")],
  ];
  const attributes = Object.entries(span.attributes || {});
  return EV.el("div", {class: "span-body"},
    tool ? EV.el("div", {class: "span-tool-call"}, EV.el("h4", {}, "Tool call: " + tool.name),
      tool.args ? EV.pre(tool.args, "tool-arguments") : null) : null,
    EV.el("table", {class: "grid span-facts"}, EV.el("tbody", {}, facts.map(([name, value]) =>
      EV.el("tr", {}, EV.el("th", {}, name), EV.el("td", {}, value))))),
    EV.el("h4", {}, "Attributes"),
    attributes.length ? EV.el("table", {class: "grid span-attributes"}, EV.el("tbody", {},
      attributes.map(([name, value]) => EV.el("tr", {}, EV.el("th", {}, name),
        EV.el("td", {}, EV.pre(EV.attributeText(value)))))))
      : EV.el("p", {class: "empty"}, "No attributes."));
};

EV.spanRow = function ({span, depth}, start, total) {
  const status = span.status || {};
  const failed = status.code === "ERROR";
  const tool = EV.spanTool(span);
  const ended = span.endTime !== null && span.endTime !== undefined;
  const offset = (span.startTime || 0) - start;
  const length = ended ? Math.max(0, span.endTime - span.startTime) : total - offset;
  const bar = EV.el("span", {class: "span-bar" + (ended ? "" : " open-ended")});
  bar.style.left = (100 * offset / total).toFixed(3) + "%";
  bar.style.width = Math.max(100 * length / total, 0.4).toFixed(3) + "%";
  const label = EV.el("span", {class: "span-label"},
    failed ? EV.statusBadge("ERROR") : null,
    EV.el("span", {class: "span-name"}, span.name || "(unnamed)"),
    tool ? EV.el("span", {class: "span-tool"}, tool.name + (tool.args ? " " + EV.clip(tool.args.replace(/\s+/g, " "), 80) : ""))
      : null);
  label.style.paddingLeft = Math.min(depth, EV.MAX_SPAN_DEPTH) + "em";
  const hover = [span.name, EV.spanMs(span.durationMs), failed ? "ERROR" + (status.message ? ": " + status.message : "")
    : null].filter(Boolean).join(" · ");
  // The body (facts and attributes) is made when the span is first opened: a trace of thousands of spans
  // then draws in a fraction of the time.
  const row = EV.el("details", {class: "span" + (failed ? " ERROR" : "") + (tool ? " tool" : ""),
    "data-span-id": span.spanId,
    ontoggle: () => { if (row.open && row.children.length === 1) row.append(EV.spanDetails(span, start, tool)); }},
  EV.el("summary", {title: hover}, label, EV.el("span", {class: "span-track"}, bar),
    EV.el("span", {class: "span-duration"}, EV.spanMs(span.durationMs))));
  return row;
};

EV.traceDownload = function (trace) {
  const text = JSON.stringify(trace, null, 2);
  return EV.el("a", {class: "trace-download", download: "trace-" + (trace.traceId || "spans") + ".json",
    href: "data:application/json;charset=utf-8," + encodeURIComponent(text)}, "Download spans as JSON");
};

EV.traceTimeline = function (trace) {
  const spans = Array.isArray(trace.spans) ? trace.spans : [];
  const head = [spans.length + " span" + (spans.length === 1 ? "" : "s")];
  const errors = spans.filter((s) => (s.status || {}).code === "ERROR").length;
  if (errors) head.push(errors + " error" + (errors === 1 ? "" : "s"));
  if (trace.dropped) head.push(trace.dropped + " dropped (over the receiver's bound)");
  head.push("trace " + (trace.traceId || "?"));
  if (!spans.length) {
    return EV.el("div", {class: "trace"}, EV.el("p", {class: "trace-head"}, head.join(" · ") + " ",
      EV.traceDownload(trace)), EV.el("p", {class: "empty"}, "The provider sent no spans for this trace."));
  }
  const start = spans.reduce((low, s) => Math.min(low, s.startTime || 0), Infinity);
  const end = spans.reduce((high, s) => Math.max(high, s.endTime ?? s.startTime ?? 0), -Infinity);
  const total = Math.max(end - start, 0.001);
  head.push(EV.spanMs(end - start) + " in all");
  const ordered = EV.spanOrder(spans);
  const list = EV.el("div", {class: "trace-spans"});
  const more = EV.el("button", {type: "button", class: "trace-more"});
  const drawMore = () => {
    const drawn = list.children.length;
    list.append(...ordered.slice(drawn, drawn + EV.SPANS_AT_ONCE).map((item) => EV.spanRow(item, start, total)));
    const left = ordered.length - list.children.length;
    more.hidden = left === 0;
    more.textContent = "Show " + Math.min(left, EV.SPANS_AT_ONCE) + " more of " + left + " spans left";
  };
  more.addEventListener("click", drawMore);
  drawMore();
  return EV.el("div", {class: "trace"},
    EV.el("p", {class: "trace-head"}, head.join(" · ") + " ", EV.traceDownload(trace)), list, more);
};

(function extendDetail() {
  const open = EV.openDetail;
  EV.openDetail = function (line, cell, column) {
    open(line, cell, column);
    if (!cell.trace) return;
    const panel = document.getElementById("detail");
    const section = EV.section("Trace", EV.traceTimeline(cell.trace));
    section.classList.add("trace-section");
    const output = [...panel.querySelectorAll("section.detail-section")]
      .find((s) => s.querySelector("h3").textContent === "Output");
    if (output) output.after(section);
    else panel.append(section);
  };
})();
