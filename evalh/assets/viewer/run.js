// One run as a matrix: a line per test (and repeat), a column per prompt × provider, each column's
// pass rate and mean score in its header (computed in Python: evalh/reports/viewfigures.py).
// Filters (status, text, provider, prompt, metric, a metadata key and value, the lines whose outputs
// differ), sort by score, vars to hide, pages of lines so that a run of 10,000 lines draws as fast as
// one of 50; a click on a cell opens its details. All of it is kept in the URL (urlstate.js). From the
// server, the first lines come first and are drawn; the rest follow in the background, and the matrix
// (its pager, filters and sort) is drawn again as each batch comes.
"use strict";

EV.STATUS_FILTERS = {
  all: null,
  failures: ["FAIL", "ERROR"],
  fail: ["FAIL"],
  error: ["ERROR"],
  pass: ["PASS"],
};

// Whether a cell is one a status choice picks: a list of statuses, or (rating.js's choices) a test.
EV.statusMatches = (statuses, cell) =>
  (typeof statuses === "function" ? statuses(cell) : statuses.includes(cell.status));

// What a run page shows when its URL says nothing (urlstate.js writes only what differs from these).
EV.RUN_DEFAULTS = Object.freeze({status: "all", queryText: "", provider: "", prompt: "", metric: "", sort: "test",
  page: 0, size: 50, mode: "", metaKey: "", metaValue: "", hidden: Object.freeze([]), open: null});

// path: the page's place in the URL ("/run/REF"), params: the state its URL holds (URLSearchParams).
EV.runPage = async function (root, ref, path, params) {
  const view = await EV.loadRun(ref);
  const state = {
    view, path, loaded: false,
    query: "", // queryText lower-cased and trimmed: what the search matches
    haystacks: null, // lower-cased text per line, built on the first search
    varNames: null, // the vars of the first lines, the Test column's and the var menu's
    wantedPage: null, // a page the URL asks for that the lines fetched so far may not reach yet
  };
  EV.readRunQuery(state, params);
  EV.clear(root).append(EV.runSummary(view.run), EV.fullToolbar(state),
    EV.el("div", {id: "matrix-pager"}), EV.el("div", {class: "matrix-wrap"}, EV.el("table", {id: "matrix",
      class: "grid matrix"})));
  EV.drawMatrix(state);
  EV.shownRun = state;
  EV.showOpenResult(state);
  requestAnimationFrame(() => performance.mark("evalh-matrix-drawn"));
  const table = document.getElementById("matrix");
  document.body.dataset.loaded = "false";
  const onmore = () => { state.haystacks = null; EV.drawMatrix(state); EV.showOpenResult(state); };
  EV.loadRest(ref, view, () => table.isConnected, onmore)
    .then(() => {
      if (!table.isConnected) return;
      state.loaded = true;
      if (state.wantedPage !== null || state.open) { EV.drawMatrix(state); EV.showOpenResult(state); }
      state.wantedPage = null;
      document.body.dataset.loaded = "true";
    })
    .catch((error) => { if (table.isConnected) EV.showError(root, error); });
};

// A change the person made (a filter, the page, a var hidden): into the state, the URL and the matrix.
// ``typing``: a change of the search text, which replaces the URL of the change before it if that was one
// too, so that Back does not step through every letter.
EV.changeRun = function (state, changes, typing) {
  Object.assign(state, {page: 0}, changes);
  state.wantedPage = null;
  EV.saveRunState(state, typing && state.lastChange === "typing");
  state.lastChange = typing ? "typing" : "";
  EV.drawMatrix(state);
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

// The toolbar with every control showing the state (the repeats part adds its status after runToolbar).
EV.fullToolbar = function (state) {
  const bar = EV.runToolbar(state);
  const values = {"status-filter": state.status, "search": state.queryText, "provider-filter": state.provider,
    "prompt-filter": state.prompt, "metric-filter": state.metric, "sort": state.sort};
  for (const [id, value] of Object.entries(values)) {
    const control = bar.querySelector("#" + id);
    if (control) control.value = value;
  }
  return bar;
};

EV.runToolbar = function (state) {
  const {columns, metrics} = state.view;
  const set = (key) => (event) => EV.changeRun(state, {[key]: event.target.value});
  const choice = (id, label, key, options) => EV.el("label", {}, label + " ",
    EV.el("select", {id, onchange: set(key)},
      options.map(([value, text]) => EV.el("option", {value}, text))));
  const unique = (values) => [...new Set(values)].map((v) => [v, v]);
  let timer = 0;
  const search = EV.el("input", {type: "search", id: "search", placeholder: "Search vars, outputs, reasons",
    oninput: (event) => {
      clearTimeout(timer);
      timer = setTimeout(() => EV.changeRun(state, {queryText: event.target.value,
        query: event.target.value.trim().toLowerCase()}, true), 120);
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
    EV.metadataFilter(state),
    EV.el("label", {title: "Only the lines whose outputs are not all the same in the columns shown"},
      EV.el("input", {type: "checkbox", id: "different-only", checked: state.mode === "different",
        onchange: (event) => EV.changeRun(state, {mode: event.target.checked ? "different" : ""})}),
      " Different outputs only"),
    EV.varMenu(state),
  );
};

// A metadata key (the tests' metadata, view.metadata: {key: [values]}) and one of its values, or any.
EV.metadataFilter = function (state) {
  const choices = state.view.metadata;
  if (!choices) return null;
  const values = EV.el("select", {id: "meta-value", disabled: !state.metaKey,
    onchange: (event) => EV.changeRun(state, {metaValue: event.target.value})});
  const fill = () => EV.clear(values).append(EV.el("option", {value: ""}, "Any value"),
    ...(choices[state.metaKey] || []).map((value) => EV.el("option", {value, title: value}, EV.clip(value, 60))));
  fill();
  values.value = state.metaValue;
  const keys = EV.el("select", {id: "meta-key", onchange: (event) => {
    EV.changeRun(state, {metaKey: event.target.value, metaValue: ""});
    fill();
    values.disabled = !state.metaKey;
  }}, EV.el("option", {value: ""}, "All"), Object.keys(choices).map((key) => EV.el("option", {value: key}, key)));
  keys.value = state.metaKey;
  return EV.el("span", {class: "meta-filter"}, EV.el("label", {}, "Metadata ", keys), " = ",
    EV.el("label", {class: "meta-value-label"}, values));
};

// The vars, each with a box to show or hide it in the Test column (a long document, say).
EV.varMenu = function (state) {
  const names = EV.varNames(state);
  if (!names.length) return null;
  const hidden = new Set(state.hidden);
  const label = () => "Vars" + (hidden.size ? " (" + hidden.size + " hidden)" : "");
  const summary = EV.el("summary", {}, label());
  const toggle = (name) => (event) => {
    if (event.target.checked) hidden.delete(name); else hidden.add(name);
    summary.textContent = label();
    EV.changeRun(state, {hidden: names.filter((n) => hidden.has(n)), page: state.page});
  };
  return EV.el("details", {class: "var-menu", id: "var-menu", ontoggle: EV.keepMenuInView}, summary,
    EV.el("div", {class: "var-menu-list"}, names.map((name) => EV.el("label", {},
      EV.el("input", {type: "checkbox", "data-var": name, checked: !hidden.has(name), onchange: toggle(name)}),
      " " + name))));
};

// An open Vars menu that would run past the right edge of a desktop page (its button is the toolbar's
// last item, near the edge at 1440 px) opens leftward from its button's right end instead.
EV.keepMenuInView = function (event) {
  const list = event.currentTarget.querySelector(".var-menu-list");
  list.classList.remove("flip");
  if (event.currentTarget.open && list.getBoundingClientRect().right > document.documentElement.clientWidth) {
    list.classList.add("flip");
  }
};

// The vars the Test column shows: those of the first 200 lines (a var every test has is among them).
EV.varNames = function (state) {
  const lines = state.view.lines;
  if (!state.varNames || (state.varNames.from < 200 && lines.length > state.varNames.from)) {
    const names = [...new Set(lines.slice(0, 200).flatMap((line) => Object.keys(line.vars)))];
    state.varNames = {from: Math.min(lines.length, 200), names};
  }
  return state.varNames.names;
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
    if (statuses && !cells.some((cell) => cell && EV.statusMatches(statuses, cell))) return;
    if (state.metric && !cells.some((cell) => cell && cell.namedScores && state.metric in cell.namedScores)) return;
    if (state.metaKey && !EV.metadataMatches(line, state.metaKey, state.metaValue)) return;
    if (state.mode === "different" && !EV.outputsDiffer(cells)) return;
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

// A line whose test's metadata has the key (and the value, unless any value will do).
EV.metadataMatches = function (line, key, value) {
  const metadata = line.metadata;
  return Boolean(metadata) && Object.hasOwn(metadata, key) && (!value || metadata[key] === value);
};

// promptfoo's "Show different outputs": the outputs shown on the line are not all the same (a missing
// result counts as an output of its own); a line with one column shown never differs.
EV.outputsDiffer = function (cells) {
  if (cells.length < 2) return false;
  const texts = cells.map((cell) => (cell ? EV.outputText(cell) : null));
  return texts.some((text) => text !== texts[0]);
};

// A column's header: its label, its pass rate and mean score (with repeats, the repeats part adds its own
// figures), the prompt as written and the provider on hover.
EV.columnHead = function (column, repeats) {
  const title = "Prompt: " + (column.text || column.prompt) + "\nProvider: " + column.provider;
  const stats = typeof column.total === "number" ? EV.el("div", {class: "column-stats"},
    repeats ? null : EV.el("span", {class: "column-pass", title: "Passed / results (pass rate)"},
      column.passed + "/" + column.total + " passed (" + EV.percent(column.passRate) + ")"),
    EV.el("span", {class: "column-mean", title: "Mean score of the column's results"},
      "mean score " + EV.score(column.meanScore))) : null;
  return EV.el("th", {class: "column", title}, EV.el("div", {class: "column-name"}, column.label), stats);
};

EV.drawMatrix = function (state) {
  if (state.wantedPage !== null) state.page = state.wantedPage; // the pager keeps it to the pages there are
  const visible = EV.visibleColumns(state);
  const lines = EV.filteredLines(state, visible);
  const redraw = (page, size) => EV.changeRun(state, {page, size});
  EV.clear(document.getElementById("matrix-pager")).append(EV.pager(state, lines.length, redraw));
  const hidden = new Set(state.hidden);
  const varNames = EV.varNames(state).filter((name) => !hidden.has(name));
  const head = EV.el("tr", {}, EV.el("th", {}, "#"), EV.el("th", {}, "Test"),
    visible.map(({column}) => EV.columnHead(column, Boolean(state.view.repeats))));
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
  const dim = statuses && !EV.statusMatches(statuses, cell);
  const metricValue = metric && metric in cell.namedScores ? metric + " " + EV.score(cell.namedScores[metric]) : "";
  return EV.el("td", {class: "cell " + cell.status + (dim ? " dim" : ""), tabindex: 0,
    title: "Show details", onclick: () => EV.openDetail(line, cell, column),
    // Enter's default would then press the details' close button, which has the focus by then
    onkeydown: (event) => { if (event.key === "Enter") { event.preventDefault(); EV.openDetail(line, cell, column); } }},
    EV.el("div", {class: "cell-head"}, EV.statusBadge(cell.status),
      EV.el("span", {class: "score"}, EV.score(cell.score)), metricValue ? EV.el("span", {class: "metric"}, metricValue) : null),
    EV.el("div", {class: "output" + (cell.calls ? " tool-calls" : "")}, EV.clip(EV.outputText(cell), 300)),
    cell.reason ? EV.el("div", {class: "reason"}, EV.clip(cell.reason, 240)) : null);
};
