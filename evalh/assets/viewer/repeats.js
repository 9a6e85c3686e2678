// A run with repeats (--repeat N): each test's pass rate over its repeats with its 95% interval
// ("14/20 70% [48-85%]") and a FLAKY badge (some repeats passed, some did not) in its cells, each
// column's figures under its header, and a "Flaky" status filter. The figures come computed in the data
// (view.repeats, evalh/reports/viewdata.py repeat_figures): this file only draws them.
//
// It extends run.js's functions rather than changing them, so that the HTML report of a run without
// repeats, which inlines this file only when the run has repeats, stays byte for byte what it was.
"use strict";

EV.STATUS_FILTERS.flaky = null; // no cell status is dimmed: the lines are chosen by their tests' figures

EV.repeatFigures = (view, test, column) => {
  const cells = view.repeats && view.repeats.tests[String(test)];
  return cells ? cells[column] : null;
};

EV.repeatBlock = function (figures, cls) {
  return EV.el("div", {class: "repeat-figures " + cls, title: "Passes / runs, pass rate [95% interval]"},
    EV.el("span", {class: "repeat-rate"}, figures.text),
    figures.flaky === true ? EV.el("span", {class: "badge FLAKY", title: "Some repeats passed, some failed"},
      "FLAKY") : null);
};

(function extendRunPage() {
  const toolbar = EV.runToolbar;
  EV.runToolbar = function (state, redraw) {
    const bar = toolbar(state, redraw);
    if (state.view.repeats) {
      bar.querySelector("#status-filter").append(
        EV.el("option", {value: "flaky"}, "Flaky tests"));
    }
    return bar;
  };

  const filtered = EV.filteredLines;
  EV.filteredLines = function (state, visible) {
    const lines = filtered(state, visible);
    if (state.status !== "flaky" || !state.view.repeats) return lines;
    return lines.filter((index) => visible.some(({index: c}) => {
      const figures = EV.repeatFigures(state.view, state.view.lines[index].test, c);
      return figures && figures.flaky;
    }));
  };

  // A test's figures go in the cells of its first line drawn on the page (its repeats follow it).
  const draw = EV.drawMatrix;
  EV.drawMatrix = function (state) {
    state.figuresShown = new Set();
    draw(state);
    if (!state.view.repeats) return;
    const heads = document.querySelectorAll("#matrix thead th.column");
    EV.visibleColumns(state).forEach(({index}, position) => {
      const figures = state.view.repeats.columns[index];
      if (!figures) return;
      const flaky = figures.flaky + " of " + figures.tests + " tests flaky";
      heads[position].append(EV.repeatBlock({text: figures.text}, "column-figures"),
        EV.el("div", {class: "repeat-flaky"}, flaky));
    });
  };

  const line = EV.matrixLine;
  EV.matrixLine = function (state, matrixLine, visible, varNames) {
    const row = line(state, matrixLine, visible, varNames);
    if (!state.view.repeats || state.figuresShown.has(matrixLine.test)) return row;
    state.figuresShown.add(matrixLine.test);
    row.classList.add("repeat-first");
    const cells = row.querySelectorAll("td.cell");
    visible.forEach(({index}, position) => {
      const figures = EV.repeatFigures(state.view, matrixLine.test, index);
      if (figures) cells[position].prepend(EV.repeatBlock(figures, "test-figures"));
    });
    return row;
  };
})();
