// Two runs side by side: `evalh diff`'s comparison, regressions first and highlighted; each changed
// result shows both outputs, and a click (or Enter) opens both results' details.
"use strict";

// [group in the comparison, kind (a CSS class), label]
EV.KINDS = [
  ["regressions", "regression", "Regression"],
  ["newFailures", "new-failure", "New failure"],
  ["fixes", "fixed", "Fixed"],
  ["scoreChanges", "changed", "Score changed"],
  ["added", "added", "New"],
  ["removed", "removed", "Gone"],
];
EV.KIND_FILTERS = {
  changes: null,
  regression: ["regression", "new-failure"],
};

EV.comparePage = async function (root, baseline, current) {
  const query = "?baseline=" + encodeURIComponent(baseline) + "&current=" + encodeURIComponent(current);
  const diff = await EV.api("/api/compare" + query);
  const pairs = EV.KINDS.flatMap(([group, kind]) => diff[group].map((change) => ({...change, kind})));
  const state = {pairs, filter: "changes", page: 0, size: 50};
  const chip = (kind, label, count) => EV.el("li", {class: "chip " + kind, id: "count-" + kind},
    label + " ", EV.el("b", {}, count));
  const side = (label, run) => EV.el("div", {class: "side"}, EV.el("h2", {}, label + ": ",
    EV.el("a", {href: "#/run/" + encodeURIComponent(run.ref)}, run.ref)),
    EV.el("p", {}, (run.name || run.description || "") + " · " + EV.when(run.timestamp) + " · pass rate " +
      EV.percent(run.passRate)));
  const filter = EV.el("select", {id: "kind-filter", onchange: (event) => {
    state.filter = event.target.value; state.page = 0; EV.drawPairs(state);
  }}, [["changes", "Every change"], ["regression", "Regressions and new failures"]]
    .map(([value, text]) => EV.el("option", {value}, text)));
  EV.clear(root).append(
    EV.el("h1", {}, "Compare runs"),
    EV.el("div", {class: "sides"}, side("Baseline", diff.baseline), side("Current", diff.current)),
    EV.el("ul", {class: "chips"}, EV.KINDS.map(([group, kind, label]) => chip(kind, label, diff[group].length)),
      chip("same", "Unchanged", diff.unchanged)),
    EV.el("div", {class: "toolbar"}, EV.el("label", {}, "Show ", filter)),
    // the server sends whole results for the first changes only (evalh/viewer/compare.py); "", not
    // null, when it sent them all: Element.append writes a null as the text "null"
    diff.detailed < pairs.length ? EV.el("p", {class: "hint", id: "detailed-note"}, "Outputs and details of the first " +
      diff.detailed + " of " + pairs.length + " changes; open either run for the others.") : "",
    EV.el("div", {id: "pairs-pager"}),
    EV.el("table", {class: "grid pairs", id: "pairs"}));
  EV.drawPairs(state);
};

// One run's result of a pair: its verdict, score, output and reason. data-label names it when a narrow
// screen stacks the pair's cells (app.css).
EV.pairSide = function (side, label) {
  const where = label.toLowerCase();
  if (!side) return EV.el("td", {class: "cell none side-" + where, "data-label": label}, "—");
  const status = side.status.toUpperCase();
  const cell = side.cell ? EV.full(side.cell) : null;
  return EV.el("td", {class: "cell " + status + " side-" + where, "data-label": label},
    EV.el("div", {class: "cell-head"}, EV.statusBadge(status), EV.el("span", {class: "score"}, EV.score(side.score))),
    cell ? EV.el("div", {class: "output" + (cell.calls ? " tool-calls" : "")}, EV.clip(EV.outputText(cell), 300))
      : null,
    side.reason ? EV.el("div", {class: "reason"}, EV.clip(side.reason, 240)) : null);
};

// Both results of a pair in the details panel: the test's vars once, then each run's result whole.
EV.openPair = function (pair, label) {
  const sides = [["Baseline", pair.before], ["Current", pair.after]].map(([name, side]) => {
    const head = EV.el("h3", {class: "pair-side-head"}, name + ": ",
      side ? [EV.statusBadge(side.status.toUpperCase()), " ", EV.score(side.score)] : "not in this run");
    if (!side || !side.cell) {
      return EV.el("section", {class: "pair-side side-" + name.toLowerCase()}, head,
        side ? EV.el("p", {class: "hint"}, "Open the run for this result's details.") : null);
    }
    const cell = EV.full(side.cell);
    return EV.el("section", {class: "pair-side side-" + name.toLowerCase()}, head,
      [EV.whyFailed(cell), ...EV.cellSections(cell)].filter((section) => section !== null));
  });
  const vars = pair.vars || {};
  EV.showDetail([EV.el("span", {class: "kind " + pair.kind}, label), " ", pair.test],
    [EV.el("p", {class: "column-label"}, pair.column)],
    [Object.keys(vars).length ? EV.section("Vars", EV.varTable(vars)) : null, ...sides]);
};

EV.drawPairs = function (state) {
  const kinds = EV.KIND_FILTERS[state.filter];
  const labels = Object.fromEntries(EV.KINDS.map(([, kind, label]) => [kind, label]));
  const pairs = state.pairs.filter((pair) => !kinds || kinds.includes(pair.kind));
  const redraw = (page, size) => { state.page = page; state.size = size; EV.drawPairs(state); };
  EV.clear(document.getElementById("pairs-pager")).append(EV.pager(state, pairs.length, redraw));
  const start = state.page * state.size;
  const rows = pairs.slice(start, start + state.size).map((pair) => {
    const scored = pair.before && pair.after && pair.before.score !== null && pair.after.score !== null;
    const delta = scored ? pair.after.score - pair.before.score : null;
    const open = () => EV.openPair(pair, labels[pair.kind]);
    return EV.el("tr", {class: "pair " + pair.kind, tabindex: 0, title: "Show both results",
      onclick: open, onkeydown: (event) => { if (event.key === "Enter") open(); }},
      EV.el("td", {class: "pair-kind"}, EV.el("span", {class: "kind " + pair.kind}, labels[pair.kind])),
      EV.el("td", {class: "test"}, EV.el("div", {class: "description"}, pair.test)),
      EV.el("td", {class: "pair-column", "data-label": "Prompt / provider"}, pair.column),
      EV.pairSide(pair.before, "Baseline"), EV.pairSide(pair.after, "Current"),
      EV.el("td", {class: "num delta", "data-label": "Δ score"},
        delta === null ? "" : (delta > 0 ? "+" : "") + delta.toFixed(2)));
  });
  const head = ["Change", "Test", "Prompt / provider", "Baseline", "Current", "Δ score"];
  const table = EV.clear(document.getElementById("pairs"));
  table.append(EV.el("thead", {}, EV.el("tr", {}, head.map((h) => EV.el("th", {}, h)))), EV.el("tbody", {}, rows));
  if (!pairs.length) table.append(EV.el("caption", {class: "empty"}, "Nothing to show: no result changed."));
};
