// One run as a matrix: a line per test (and repeat), a column per prompt × provider.
// Filters (status, text, provider, prompt, metric), sort by score, pages of lines so that a run of
// 10,000 lines draws as fast as one of 50; a click on a cell opens its details. From the server, the
// first lines come first and are drawn; the rest follow in the background, and the matrix (its pager,
// filters and sort) is drawn again as each batch comes.
"use strict";

EV.STATUS_FILTERS = {
  all: null,
  failures: ["FAIL", "ERROR"],
  fail: ["FAIL"],
  error: ["ERROR"],
  pass: ["PASS"],
};

EV.runPage = async function (root, ref) {
  const view = await EV.loadRun(ref);
  const state = {
    view,
    status: "all", query: "", provider: "", prompt: "", metric: "", sort: "test",
    page: 0, size: 50,
    haystacks: null, // lower-cased text per line, built on the first search
  };
  EV.clear(root).append(EV.runSummary(view.run), EV.runToolbar(state, () => EV.drawMatrix(state)),
    EV.el("div", {id: "matrix-pager"}), EV.el("div", {class: "matrix-wrap"}, EV.el("table", {id: "matrix",
      class: "grid matrix"})));
  EV.drawMatrix(state);
  requestAnimationFrame(() => performance.mark("evalh-matrix-drawn"));
  const table = document.getElementById("matrix");
  document.body.dataset.loaded = "false";
  EV.loadRest(ref, view, () => table.isConnected, () => { state.haystacks = null; EV.drawMatrix(state); })
    .then(() => { if (table.isConnected) document.body.dataset.loaded = "true"; })
    .catch((error) => { if (table.isConnected) EV.showError(root, error); });
};

EV.runSummary = function (run) {
  const item = (label, value, cls) => EV.el("li", {class: cls || ""}, label + " ", EV.el("b", {}, value));
  return EV.el("section", {class: "summary", id: "summary"},
    EV.el("h1", {}, run.name || run.description || "Run " + run.ref),
    EV.el("ul", {},
      item("Rows", run.rows), item("Passed", run.passed, "pass"), item("Failed", run.failed, "fail"),
      item("Errors", run.errors, "error"), item("Pass rate", EV.percent(run.passRate)),
      item("Duration", EV.ms(run.durationMs)), item("Started", EV.when(run.timestamp)),
      run.interrupted ? item("Interrupted by", (run.interruptedBy || "SIGINT") + ": " + run.notRun + " not run",
        "error") : null),
    // how many outputs came from the cache (they may predate a change of the app): set as text
    run.cache ? EV.el("p", {class: "cache-note", id: "cache-note"}, run.cache + ".") : null);
};

EV.runToolbar = function (state, redraw) {
  const {columns, metrics} = state.view;
  const set = (key) => (event) => { state[key] = event.target.value; state.page = 0; redraw(); };
  const choice = (id, label, key, options) => EV.el("label", {}, label + " ",
    EV.el("select", {id, onchange: set(key)},
      options.map(([value, text]) => EV.el("option", {value}, text))));
  const unique = (values) => [...new Set(values)].map((v) => [v, v]);
  let timer = 0;
  const search = EV.el("input", {type: "search", id: "search", placeholder: "Search vars, outputs, reasons",
    oninput: (event) => {
      clearTimeout(timer);
      timer = setTimeout(() => { state.query = event.target.value.trim().toLowerCase(); state.page = 0;
        redraw(); }, 120);
    }});
  return EV.el("div", {class: "toolbar", id: "filters"},
    choice("status-filter", "Status", "status", [["all", "All"], ["failures", "Failures (fail + error)"],
      ["fail", "Failed"], ["error", "Errors"], ["pass", "Passed"]]),
    search,
    choice("provider-filter", "Provider", "provider", [["", "All"], ...unique(columns.map((c) => c.provider))]),
    choice("prompt-filter", "Prompt", "prompt", [["", "All"], ...unique(columns.map((c) => c.prompt))]),
    metrics.length ? choice("metric-filter", "Metric", "metric", [["", "All"], ...unique(metrics)]) : null,
    choice("sort", "Sort", "sort", [["test", "Test order"], ["score-asc", "Score, lowest first"],
      ["score-desc", "Score, highest first"]]),
  );
};

EV.visibleColumns = function (state) {
  return state.view.columns
    .map((column, index) => ({column, index}))
    .filter(({column}) => (!state.provider || column.provider === state.provider) &&
      (!state.prompt || column.prompt === state.prompt));
};

EV.cellText = function (cell) {
  const full = EV.full(cell);
  const reasons = full.assertions.map((a) => a.reason).join("\n");
  return (full.output + "\n" + full.reason + "\n" + reasons).toLowerCase();
};

EV.haystacks = function (state) {
  if (!state.haystacks) {
    state.haystacks = state.view.lines.map((line) => ({
      line: (line.description + "\n" + EV.varsText(line.vars)).toLowerCase(),
      cells: line.cells.map((cell) => (cell ? EV.cellText(cell) : "")),
    }));
  }
  return state.haystacks;
};

EV.cellValue = (cell, metric) => (metric ? (cell.namedScores || {})[metric] : cell.score);

// The lines that pass every filter, sorted; each with the index of its line in the run.
EV.filteredLines = function (state, visible) {
  const statuses = EV.STATUS_FILTERS[state.status];
  const hay = state.query ? EV.haystacks(state) : null;
  const out = [];
  state.view.lines.forEach((line, index) => {
    const cells = visible.map(({index: c}) => line.cells[c]);
    if (statuses && !cells.some((cell) => cell && statuses.includes(cell.status))) return;
    if (state.metric && !cells.some((cell) => cell && cell.namedScores && state.metric in cell.namedScores)) return;
    if (hay && !hay[index].line.includes(state.query) &&
        !visible.some(({index: c}) => hay[index].cells[c].includes(state.query))) return;
    out.push(index);
  });
  if (state.sort !== "test") {
    const sign = state.sort === "score-asc" ? 1 : -1;
    const key = (index) => {
      const values = visible.map(({index: c}) => state.view.lines[index].cells[c])
        .filter((cell) => cell && typeof EV.cellValue(cell, state.metric) === "number")
        .map((cell) => EV.cellValue(cell, state.metric));
      return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
    };
    const keys = new Map(out.map((index) => [index, key(index)]));
    out.sort((a, b) => {
      const ka = keys.get(a), kb = keys.get(b);
      if (ka === null || kb === null) return (ka === null) - (kb === null); // no score: last
      return sign * (ka - kb) || a - b;
    });
  }
  return out;
};

EV.drawMatrix = function (state) {
  const visible = EV.visibleColumns(state);
  const lines = EV.filteredLines(state, visible);
  const redraw = (page, size) => { state.page = page; state.size = size; EV.drawMatrix(state); };
  EV.clear(document.getElementById("matrix-pager")).append(EV.pager(state, lines.length, redraw));
  const varNames = [...new Set(state.view.lines.slice(0, 200).flatMap((line) => Object.keys(line.vars)))];
  const head = EV.el("tr", {}, EV.el("th", {}, "#"), EV.el("th", {}, "Test"),
    visible.map(({column}) => EV.el("th", {class: "column"}, column.label)));
  const start = state.page * state.size;
  const body = lines.slice(start, start + state.size).map((index) =>
    EV.matrixLine(state, state.view.lines[index], visible, varNames));
  const table = EV.clear(document.getElementById("matrix"));
  table.append(EV.el("thead", {}, head), EV.el("tbody", {}, body));
  if (!lines.length) table.append(EV.el("caption", {class: "empty"}, "No rows match the filters."));
};

EV.matrixLine = function (state, line, visible, varNames) {
  const number = String(line.test + 1) + (line.repeat ? "." + (line.repeat + 1) : "");
  const vars = varNames.filter((name) => name in line.vars)
    .map((name) => EV.el("div", {class: "var"}, EV.el("span", {class: "var-name"}, name + ": "),
      EV.clip(line.vars[name], 160)));
  const statuses = EV.STATUS_FILTERS[state.status];
  return EV.el("tr", {"data-test": line.test},
    EV.el("td", {class: "num"}, number),
    EV.el("td", {class: "test"}, line.description ? EV.el("div", {class: "description"}, line.description) : null,
      vars),
    visible.map(({column, index}) => EV.matrixCell(line, line.cells[index], column, statuses, state.metric)));
};

EV.matrixCell = function (line, sparse, column, statuses, metric) {
  if (!sparse) return EV.el("td", {class: "cell none"});
  const cell = EV.full(sparse);
  const dim = statuses && !statuses.includes(cell.status);
  const metricValue = metric && metric in cell.namedScores ? metric + " " + EV.score(cell.namedScores[metric]) : "";
  return EV.el("td", {class: "cell " + cell.status + (dim ? " dim" : ""), tabindex: 0,
    title: "Show details", onclick: () => EV.openDetail(line, cell, column),
    onkeydown: (event) => { if (event.key === "Enter") EV.openDetail(line, cell, column); }},
    EV.el("div", {class: "cell-head"}, EV.statusBadge(cell.status),
      EV.el("span", {class: "score"}, EV.score(cell.score)), metricValue ? EV.el("span", {class: "metric"}, metricValue) : null),
    EV.el("div", {class: "output" + (cell.calls ? " tool-calls" : "")}, EV.clip(EV.outputText(cell), 300)),
    cell.reason ? EV.el("div", {class: "reason"}, EV.clip(cell.reason, 240)) : null);
};
