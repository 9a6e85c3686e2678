// The router: #/ the run history, #/run/REF one run, #/compare/BASELINE/CURRENT two runs. The HTML
// report, which inlines one run, always shows that run.
"use strict";

EV.route = async function () {
  const root = document.getElementById("app");
  EV.closeDetail();
  document.body.dataset.ready = "false";
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const nav = EV.clear(document.getElementById("nav"));
  try {
    if (EV.inlined()) {
      await EV.runPage(root, EV.inlined().view.run.ref);
    } else if (parts[0] === "run" && parts[1]) {
      nav.append(EV.el("a", {href: "#/"}, "Runs"), " › ", parts[1]);
      await EV.runPage(root, parts[1]);
    } else if (parts[0] === "compare" && parts[1] && parts[2]) {
      nav.append(EV.el("a", {href: "#/"}, "Runs"), " › compare");
      await EV.comparePage(root, parts[1], parts[2]);
    } else {
      await EV.historyPage(root);
    }
    document.body.dataset.ready = "true";
  } catch (error) {
    EV.showError(root, error);
  }
};

document.addEventListener("keydown", (event) => { if (event.key === "Escape") EV.closeDetail(); });
window.addEventListener("hashchange", EV.route);
EV.route();
