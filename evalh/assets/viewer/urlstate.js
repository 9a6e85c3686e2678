// A run page's state in its URL, after the "?" of the hash (#/run/REF?status=failures&q=refund&open=3:2),
// so that a link opens the same view, a reload keeps it and Back and Forward step through the changes.
// The hash, not the query of the URL: the HTML report (a file:// page) has only the hash to keep it in.
// A value the URL holds that the run does not have (a provider it lacks, a page past its end, a result
// it never had, a name mistyped) is ignored: the page shows what it would without it, never an error.
//
//   status, q (search), provider, prompt, metric, sort, mode=different, meta + metaValue (a metadata key
//   and value), hide (a var, repeated), page (from 1), size, open (LINE:COLUMN: the line's number as the
//   matrix shows it, "3" or "3.2" for a repeat, and the column's from 1)
"use strict";

EV.PAGE_SIZES = [50, 100, 250, 1000];
EV.SORTS = ["test", "score-asc", "score-desc"];
EV.MAX_QUERY = 1000; // characters of search text taken from a URL

// "#/run/r1?status=fail" -> {path: "/run/r1", params: URLSearchParams("status=fail")}
EV.splitHash = function (hash) {
  const text = hash.replace(/^#/, "");
  const mark = text.indexOf("?");
  return mark < 0 ? {path: text, params: new URLSearchParams()}
    : {path: text.slice(0, mark), params: new URLSearchParams(text.slice(mark + 1))};
};

// The state the URL's params say, each value checked against the run; a value that fails keeps the default.
EV.readRunQuery = function (state, params) {
  const view = state.view;
  const get = (name, allowed) => {
    const value = params.get(name);
    return value !== null && allowed.includes(value) ? value : null;
  };
  const statuses = Object.keys(EV.STATUS_FILTERS).filter((s) => s !== "flaky" || view.repeats);
  const metaKeys = Object.keys(view.metadata || {});
  const metaKey = get("meta", metaKeys) || "";
  const queryText = (params.get("q") || "").slice(0, EV.MAX_QUERY);
  const names = new Set(EV.varNames(state));
  const page = /^[1-9][0-9]{0,6}$/.test(params.get("page") || "") ? Number(params.get("page")) - 1 : 0;
  Object.assign(state, EV.RUN_DEFAULTS, {
    status: get("status", statuses) || "all",
    queryText, query: queryText.trim().toLowerCase(),
    provider: get("provider", view.columns.map((c) => c.provider)) || "",
    prompt: get("prompt", view.columns.map((c) => c.prompt)) || "",
    metric: get("metric", view.metrics) || "",
    sort: get("sort", EV.SORTS) || "test",
    size: Number(get("size", EV.PAGE_SIZES.map(String)) || 50),
    mode: get("mode", ["different"]) || "",
    metaKey, metaValue: (metaKey && get("metaValue", view.metadata[metaKey])) || "",
    hidden: [...new Set(params.getAll("hide"))].filter((name) => names.has(name)),
    open: EV.parseOpen(params.get("open"), view.columns.length),
    page, lastChange: "",
  });
  state.wantedPage = page ? page : null; // the lines it needs may still be on their way
  state.haystacks = null;
};

// "3.2:1" -> {test: 2, repeat: 1, column: 0}; null when it is not of that form or past the columns.
EV.parseOpen = function (text, columns) {
  const match = /^([1-9][0-9]{0,8})(?:\.([1-9][0-9]{0,8}))?:([1-9][0-9]{0,4})$/.exec(text || "");
  if (!match || Number(match[3]) > columns) return null;
  return {test: Number(match[1]) - 1, repeat: match[2] ? Number(match[2]) - 1 : 0, column: Number(match[3]) - 1};
};

// The URL params of a state: only what differs from the defaults, in a fixed order.
EV.runQuery = function (state) {
  const params = new URLSearchParams();
  const put = (name, value, fallback) => { if (value !== fallback) params.set(name, String(value)); };
  put("status", state.status, "all");
  put("q", state.queryText, "");
  put("provider", state.provider, "");
  put("prompt", state.prompt, "");
  put("metric", state.metric, "");
  put("sort", state.sort, "test");
  put("mode", state.mode, "");
  put("meta", state.metaKey, "");
  put("metaValue", state.metaValue, "");
  for (const name of state.hidden) params.append("hide", name);
  put("page", (state.wantedPage !== null ? state.wantedPage : state.page) + 1, 1);
  put("size", state.size, 50);
  if (state.open) {
    const {test, repeat, column} = state.open;
    params.set("open", (test + 1) + (repeat ? "." + (repeat + 1) : "") + ":" + (column + 1));
  }
  return params.toString().replace(/%3A/g, ":"); // a colon needs no escape in a hash: 3:2 reads better
};

// The state into the URL: a new history entry (Back returns to the one before), or in place (replace).
// Setting the hash works in a file:// page too, where history.pushState may not.
EV.saveRunState = function (state, replace) {
  const query = EV.runQuery(state);
  const hash = "#" + state.path + (query ? "?" + query : "");
  if (hash === location.hash || (hash === "#" && !location.hash)) return;
  if (replace) location.replace(hash);
  else location.hash = hash;
};

// The URL changed and still names this run page (Back, Forward, a link, a hand edit): show what it says.
// Returns false when the URL is the state's own (a change just saved), so nothing is drawn again.
EV.applyRunQuery = function (state, params) {
  if (new URLSearchParams(EV.runQuery(state)).toString() === params.toString()) return false;
  EV.readRunQuery(state, params);
  if (state.loaded) state.wantedPage = null;
  document.getElementById("filters").replaceWith(EV.fullToolbar(state));
  EV.drawMatrix(state);
  if (state.open) EV.showOpenResult(state);
  else EV.closeDetail();
  return true;
};

// The result the URL opens, once its line is there; forgotten when every line is there and it is not.
EV.showOpenResult = function (state) {
  const wanted = state.open;
  if (!wanted || state.shown === wanted) return;
  const line = state.view.lines.find((l) => l.test === wanted.test && l.repeat === wanted.repeat);
  const cell = line && line.cells[wanted.column];
  if (cell) {
    state.shown = wanted;
    EV.openDetail(line, EV.full(cell), state.view.columns[wanted.column]);
  } else if (state.loaded || state.view.total === undefined || state.view.lines.length >= state.view.total) {
    state.open = null;
  }
};

// Opening and closing a result's details is a change of the URL too (only on a run page).
(function keepTheOpenResult() {
  const open = EV.openDetail;
  EV.openDetail = function (line, cell, column) {
    open(line, cell, column);
    const state = EV.shownRun;
    const index = state ? state.view.columns.indexOf(column) : -1;
    if (index < 0) return;
    state.open = state.shown = {test: line.test, repeat: line.repeat, column: index};
    EV.saveRunState(state);
  };
  const close = EV.closeDetail;
  EV.closeDetail = function () {
    close();
    const state = EV.shownRun;
    if (state && state.open) {
      state.open = state.shown = null;
      EV.saveRunState(state);
    }
  };
})();
