// The detail panel of one cell: everything the run knows about that result.
"use strict";

EV.section = (title, ...content) => EV.el("section", {class: "detail-section"}, EV.el("h3", {}, title), content);
EV.pre = (text, cls) => EV.el("pre", {class: cls || ""}, text);

// An output that is tool calls reads as name(arguments) lines (cell.calls, made by viewdata.py).
EV.outputText = (cell) => (cell.calls ? cell.calls.join("\n") : cell.output || cell.error || "");

EV.openDetail = function (line, cell, column) {
  const number = "Test " + (line.test + 1) + (line.repeat ? " repeat " + (line.repeat + 1) : "");
  EV.showDetail(
    [EV.statusBadge(cell.status), " ", number, line.description ? ": " + line.description : ""],
    [EV.el("p", {class: "column-label"}, column.label), EV.scoreLine(cell)],
    [EV.whyFailed(cell), ...EV.cellSections(cell),
      Object.keys(line.vars).length ? EV.section("Vars", EV.varTable(line.vars)) : null,
      EV.section("Usage", EV.usageList(cell))]);
};

// The panel with a head (a title, then lines under it) and sections; null parts are left out: Element.append
// would print a null as the text "null".
EV.showDetail = function (title, lines, sections) {
  const panel = document.getElementById("detail");
  const close = EV.el("button", {type: "button", class: "close", "aria-label": "Close details",
    onclick: EV.closeDetail}, "×");
  EV.clear(panel).append(EV.el("header", {class: "detail-head"}, close, EV.el("h2", {}, title), lines),
    ...sections.filter((section) => section !== null));
  panel.hidden = false;
  panel.scrollTop = 0;
  close.focus();
};

EV.scoreLine = (cell) => EV.el("p", {}, "Score ", EV.el("b", {class: "detail-score"}, EV.score(cell.score)),
  Object.entries(cell.namedScores).map(([name, value]) => EV.el("span", {class: "named"},
    " · " + name + " " + EV.score(value))));

// A result's assertions, output and prompt: the sections a cell's details and a comparison's share.
EV.cellSections = (cell) => [
  EV.section("Assertions", EV.assertionTable(cell.assertions)),
  EV.section("Output", EV.pre(EV.outputText(cell), "output-text" + (cell.calls ? " tool-calls" : "")),
    cell.calls ? EV.el("details", {class: "raw-output"}, EV.el("summary", {}, "Raw output"),
      EV.pre(cell.output, "output-raw")) : null),
  EV.section("Prompt", EV.pre(cell.prompt, "prompt-text")),
];

EV.assertionVerdict = (a) => (a.error ? "ERROR" : a.skipped ? "SKIPPED" : a.pass ? "PASS" : "FAIL");

// "score 0.20 vs threshold 0.5": how an assertion's score stood against its threshold.
EV.scoreAgainst = (a) => (a.score === null ? "" : "score " + EV.score(a.score) +
  (a.threshold === null ? "" : " vs threshold " + a.threshold));

// "Why it failed": every failed or errored assertion (type, value, score vs threshold, reason), and the
// row's own reason when no assertion gives it (a provider's error, the test's threshold).
EV.whyFailed = function (cell) {
  if (cell.status === "PASS") return null;
  const failed = cell.assertions.filter((a) => ["FAIL", "ERROR"].includes(EV.assertionVerdict(a)));
  // the row's reason is its first failed assertion's "type: reason", or a rating's reason as it stands (the
  // human component's); any other (an error, a threshold) is its own
  const told = failed.some((a) => a.reason && (cell.reason === a.reason || cell.reason.endsWith(": " + a.reason)));
  const own = cell.reason && !told ? EV.el("div", {class: "why-own"}, cell.reason) : null;
  if (!own && !failed.length) return null;
  const items = failed.map((a) => {
    const verdict = EV.assertionVerdict(a);
    return EV.el("li", {class: "why-item " + verdict}, EV.statusBadge(verdict), " ",
      EV.el("b", {class: "why-type"}, a.type),
      a.value !== null ? EV.el("span", {class: "why-value"}, " " + EV.clip(a.value, 200)) : null,
      a.score !== null ? EV.el("span", {class: "why-score"}, " · " + EV.scoreAgainst(a)) : null,
      a.reason ? EV.el("div", {class: "why-reason"}, a.reason) : null,
      // a person's fail: their comment is the why (the rating's own section has the rest)
      a.type === "human" && cell.rating && cell.rating.comment
        ? EV.el("div", {class: "why-reason why-comment"}, cell.rating.comment) : null);
  });
  const count = failed.length > 1 ? failed.length + " of " + cell.assertions.length + " assertions did not pass" : "";
  return EV.section("Why it " + (cell.status === "ERROR" ? "errored" : "failed"),
    EV.el("div", {class: "reason-text"}, own, count ? EV.el("p", {class: "why-count"}, count) : null,
      items.length ? EV.el("ol", {class: "why-failed"}, items) : null));
};

EV.closeDetail = function () {
  const panel = document.getElementById("detail");
  if (panel) panel.hidden = true;
};

// A table in a box of its own that scrolls sideways when the table is wider than the panel (a phone).
EV.scrollBox = (table) => EV.el("div", {class: "table-scroll"}, table);

EV.assertionTable = function (assertions) {
  if (!assertions.length) return EV.el("p", {class: "empty"}, "No assertions.");
  const head = ["", "Type", "Score", "Threshold", "Weight", "Metric", "Reason"];
  const rows = assertions.flatMap((a) => {
    const verdict = EV.assertionVerdict(a);
    // data-label: a narrow screen stacks a row's cells, each named by its column (app.css)
    const row = EV.el("tr", {class: "assertion " + verdict},
      EV.el("td", {class: "verdict"}, EV.statusBadge(verdict)),
      EV.el("td", {class: "type depth-" + Math.min(a.depth, 4)}, a.type,
        a.value !== null ? EV.el("div", {class: "value"}, EV.clip(a.value, 200)) : null),
      EV.el("td", {class: "num", "data-label": "Score"}, EV.score(a.score)),
      EV.el("td", {class: "num", "data-label": "Threshold"}, a.threshold === null ? "–" : String(a.threshold)),
      EV.el("td", {class: "num", "data-label": "Weight"}, String(a.weight)),
      EV.el("td", {class: "metric-name", "data-label": "Metric"}, a.metric || ""),
      EV.el("td", {class: "assertion-reason"}, a.reason));
    // The judge's conversation gets the table's whole width, in a row of its own.
    return a.judge ? [row, EV.el("tr", {class: "judge-row"}, EV.el("td", {colspan: head.length}, EV.judge(a.judge)))]
      : [row];
  });
  return EV.scrollBox(EV.el("table", {class: "grid assertions"},
    EV.el("thead", {}, EV.el("tr", {}, head.map((h) => EV.el("th", {}, h)))), EV.el("tbody", {}, rows)));
};

EV.judge = function (judge) {
  const steps = judge.steps.length > 1 ? judge.steps : [{prompt: judge.prompt, reply: judge.reply}];
  return EV.el("details", {class: "judge"},
    EV.el("summary", {}, "Judge prompt and reply" + (judge.grader ? " (" + judge.grader + ")" : "")),
    steps.map((step, i) => [
      steps.length > 1 ? EV.el("h4", {}, "Step " + (i + 1)) : null,
      EV.el("h4", {}, "Prompt"), EV.pre(step.prompt || "", "judge-prompt"),
      EV.el("h4", {}, "Reply"), EV.pre(step.reply || "", "judge-reply"),
    ]));
};

EV.varTable = function (vars) {
  return EV.scrollBox(EV.el("table", {class: "grid vars"}, EV.el("tbody", {}, Object.entries(vars).map(
    ([name, value]) => EV.el("tr", {}, EV.el("th", {}, name), EV.el("td", {}, EV.pre(value)))))));
};

EV.usageList = function (cell) {
  const t = cell.tokens, g = cell.gradingTokens;
  const item = (label, value) => EV.el("li", {}, label + " ", EV.el("b", {}, value));
  return EV.el("ul", {class: "usage"},
    item("Latency", EV.ms(cell.latencyMs) + (cell.cached ? " (cached)" : "")),
    item("Tokens", `${t.total} (prompt ${t.prompt}, completion ${t.completion}, cached ${t.cached})`),
    item("Grading tokens", String(g.total)),
    item("Cost", EV.cost(cell.cost)));
};
