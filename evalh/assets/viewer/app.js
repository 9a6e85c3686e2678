// The router: #/ the run history, #/run/REF one run, #/compare/BASELINE/CURRENT two runs. The HTML
// report, which inlines one run, always shows that run. What follows a "?" in the hash is the run page's
// state (urlstate.js): a change of it alone redraws the page shown, without loading it again.
"use strict";

EV.route = async function () {
  const root = document.getElementById("app");
  const {path, params} = EV.splitHash(location.hash);
  const shown = EV.shownRun;
  if (shown && (EV.inlined() || shown.path === path)) {
    EV.applyRunQuery(shown, params);
    return;
  }
  EV.shownRun = null;
  EV.closeDetail();
  document.body.dataset.ready = "false";
  const nav = EV.clear(document.getElementById("nav"));
  try {
    const parts = path.replace(/^\/?/, "").split("/").map(decodeURIComponent);
    if (EV.inlined()) {
      await EV.runPage(root, EV.inlined().view.run.ref, "/", params);
    } else if (parts[0] === "run" && parts[1]) {
      nav.append(EV.el("a", {href: "#/"}, "Runs"), " › ", parts[1]);
      await EV.runPage(root, parts[1], path, params);
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

// The page drawn anew from fresh data (after a change to the run, say), in the view its URL holds: a
// plain EV.route() on the same URL only redraws what the URL changed, which is nothing.
EV.reload = function () {
  EV.shownRun = null;
  return EV.route();
};

document.addEventListener("keydown", (event) => { if (event.key === "Escape") EV.closeDetail(); });
window.addEventListener("hashchange", EV.route);
EV.route();
