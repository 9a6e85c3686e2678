// The run history: every run the viewer knows, newest first; pick two to compare.
"use strict";

EV.runState = function (run) {
  if (run.state === "running") return "still recording";
  if (run.state === "incomplete") return "incomplete (its process ended before the run finished)";
  if (run.interrupted) return "interrupted" + (run.interruptedBy ? " (" + run.interruptedBy + ")" : "");
  return "";
};

EV.historyPage = async function (root) {
  const {runs} = await EV.api("/api/runs");
  const chosen = [];
  const compare = EV.el("button", {type: "button", id: "compare-selected", disabled: true,
    onclick: () => {
      // The run lower in the list (older) is the baseline.
      const [a, b] = chosen.slice().sort((x, y) => runs.indexOf(y) - runs.indexOf(x));
      location.hash = "#/compare/" + encodeURIComponent(a.ref) + "/" + encodeURIComponent(b.ref);
    }}, "Compare selected");
  const pick = (run, box) => {
    if (box.checked) chosen.push(run);
    else chosen.splice(chosen.indexOf(run), 1);
    compare.disabled = chosen.length !== 2;
  };
  const rows = runs.map((run) => {
    const box = EV.el("input", {type: "checkbox", class: "pick", "aria-label": "select " + run.ref});
    box.addEventListener("change", () => pick(run, box));
    return EV.el("tr", {class: run.failed || run.errors ? "has-failures" : ""},
      EV.el("td", {}, box),
      EV.el("td", {}, EV.el("a", {class: "run-link", href: "#/run/" + encodeURIComponent(run.ref)}, run.ref)),
      EV.el("td", {}, EV.when(run.timestamp)),
      // named by its description, else its config's file name (or its report file's)
      EV.el("td", {class: "desc" + (run.description ? "" : " unnamed")}, run.name || run.description || run.ref),
      // data-label: a phone shows each run as a card, its figures named (app.css)
      EV.el("td", {class: "num", "data-label": "Rows"}, run.rows),
      EV.el("td", {class: "num pass", "data-label": "Passed"}, run.passed),
      EV.el("td", {class: "num fail", "data-label": "Failed"}, run.failed),
      EV.el("td", {class: "num error", "data-label": "Errors"}, run.errors),
      EV.el("td", {class: "num rate", "data-label": "Pass rate"}, EV.percent(run.passRate)),
      EV.el("td", {class: "state"}, EV.runState(run)));
  });
  const head = ["", "Run", "Started", "Name", "Rows", "Passed", "Failed", "Errors", "Pass rate", ""];
  EV.clear(root).append(
    EV.el("h1", {}, "Runs"),
    runs.length ? EV.el("div", {class: "toolbar"}, compare, EV.el("span", {class: "hint"},
      "Tick two runs to compare them; the older one is the baseline.")) : "",
    runs.length
      ? EV.scrollBox(EV.el("table", {class: "grid", id: "runs"},
        EV.el("thead", {}, EV.el("tr", {}, head.map((h) => EV.el("th", {}, h)))),
        EV.el("tbody", {}, rows)))
      : EV.el("p", {class: "empty"}, "No runs yet: run `evalh run` first."),
  );
};
