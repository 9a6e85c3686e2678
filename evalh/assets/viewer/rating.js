// A person's rating of a result (issue 28). A rated result's matrix cell carries a RATED mark (its verdict
// is already the rated one: the server applies the rating to the row), and its details say who rated it,
// when, with what score and comment (as text, never markup). In `evalh view` of the run store, the details
// of a result also offer Pass / Fail, an optional score and a comment, Save and Clear; after a write the
// result and the run's counts are fetched again. There, it is a review queue too: the Status choices
// "Not rated yet" and "Rated", "Save and next" (the next result not rated yet, in the matrix's order) and
// the keys p, f, s, n in the details.
//
// The page can write only when the server gave it its token (<meta name="evalh-token">, never in the .html
// report, nor with --read-only); every write carries it in X-Evalh-Token, with a JSON body. It extends
// run.js's and detail.js's functions rather than changing them, so that the HTML report of a run without
// ratings, which inlines this file only when a row is rated, stays byte for byte what it was.
"use strict";

EV.MAX_COMMENT = 4000; // evalh.store.ratings.MAX_COMMENT_CHARS
EV.cellNodes = new WeakMap(); // a cell's data -> its matrix <td>, to draw it again once rated

EV.meta = function (name) {
  const node = document.querySelector('meta[name="' + name + '"]');
  return node ? node.getAttribute("content") : null;
};

EV.ratingWords = (rating) => "rated " + (rating.pass ? "pass" : "fail") + " by " + (rating.reviewer || "unknown");

EV.ratedMark = (rating) => EV.el("span", {class: "badge RATED rated-mark", title: EV.ratingWords(rating),
  "aria-label": EV.ratingWords(rating)}, "RATED");

EV.ratingUrl = (ref, id) =>
  "/api/runs/" + encodeURIComponent(ref) + "/rows/" + encodeURIComponent(id) + "/rating";

// One write (POST a rating, DELETE it); its error message is the server's, which says what to do.
EV.sendRating = async function (method, url, body) {
  const response = await fetch(url, {method, credentials: "same-origin", headers: {
    "Content-Type": "application/json", Accept: "application/json", "X-Evalh-Token": EV.meta("evalh-token")},
  body: JSON.stringify(body)});
  const answer = await response.json().catch(() => ({error: response.status + " " + response.statusText}));
  if (!response.ok) throw new Error(answer.error || response.status + " " + response.statusText);
  return answer;
};

EV.currentRating = function (rating) {
  return EV.el("div", {class: "rating-current"},
    EV.el("p", {}, EV.statusBadge(rating.pass ? "PASS" : "FAIL"), " ",
      EV.el("span", {class: "rating-who"}, EV.ratingWords(rating)),
      rating.ratedAt ? " on " + EV.when(rating.ratedAt) : "", " · score ", EV.score(rating.score)),
    rating.comment ? EV.pre(rating.comment, "rating-comment") : null);
};

EV.ratingControls = function (line, cell, column) {
  let verdict = cell.rating ? (cell.rating.pass ? "pass" : "fail") : null;
  const status = EV.el("p", {class: "rating-status", role: "status", tabindex: -1});
  const choose = (which) => {
    verdict = which;
    pass.setAttribute("aria-pressed", String(which === "pass"));
    fail.setAttribute("aria-pressed", String(which === "fail"));
    save.disabled = next.disabled = false;
  };
  const pass = EV.el("button", {type: "button", class: "rate-pass", onclick: () => choose("pass")}, "Pass");
  const fail = EV.el("button", {type: "button", class: "rate-fail", onclick: () => choose("fail")}, "Fail");
  const score = EV.el("input", {type: "number", class: "rating-score", min: 0, max: 1, step: 0.01,
    placeholder: "1 or 0", value: cell.rating ? String(cell.rating.score) : null});
  const comment = EV.el("textarea", {class: "rating-comment-input", rows: 3, maxlength: EV.MAX_COMMENT});
  comment.value = cell.rating ? cell.rating.comment || "" : "";
  const save = EV.el("button", {type: "button", class: "rating-save", disabled: verdict === null}, "Save rating");
  const next = EV.el("button", {type: "button", class: "rating-next", disabled: verdict === null,
    title: "Save, then open the next result not rated yet"}, "Save and next");
  const clear = cell.rating ? EV.el("button", {type: "button", class: "rating-clear"}, "Clear rating") : null;
  if (verdict) choose(verdict);
  else for (const button of [pass, fail]) button.setAttribute("aria-pressed", "false");
  const url = EV.ratingUrl(EV.shownView.run.ref, cell.id);
  // true once written and drawn again; false (the server's reason shown) when the write was refused
  const write = async (method, body, done) => {
    const buttons = [pass, fail, save, next, clear].filter(Boolean);
    for (const button of buttons) button.disabled = true;
    status.className = "rating-status";
    status.textContent = "Saving…";
    try {
      await EV.sendRating(method, url, body);
      await EV.refreshRated(line, cell, column, done);
      return true;
    } catch (error) {
      for (const button of buttons) button.disabled = false;
      status.className = "rating-status error";
      status.textContent = String(error.message || error);
      return false;
    }
  };
  const saveRating = () => {
    const body = {pass: verdict === "pass"};
    if (score.value.trim() !== "") body.score = Number(score.value);
    if (comment.value) body.comment = comment.value;
    return write("POST", body, "Saved: the result is " + (body.pass ? "passed" : "failed") + " by your rating.");
  };
  save.addEventListener("click", saveRating);
  next.addEventListener("click", async () => {
    const queue = EV.reviewQueue(line, column); // in the order the matrix shows before the write
    if (await saveRating()) await EV.openNextUnrated(queue);
  });
  if (clear) clear.addEventListener("click", () => write("DELETE", {}, "Cleared: the graded verdict is back."));
  const reviewer = EV.meta("evalh-reviewer");
  return EV.el("div", {class: "rating-form"},
    reviewer ? EV.el("p", {class: "rating-reviewer"}, "You rate as ", EV.el("b", {}, reviewer),
      " (EVALH_REVIEWER or your OS user)") : null,
    EV.el("div", {class: "rating-verdict", role: "group", "aria-label": "Your verdict"}, pass, fail),
    EV.el("label", {}, "Score (0 to 1, optional) ", score),
    EV.el("label", {class: "rating-comment-label"}, "Comment (optional) ", comment),
    EV.el("div", {class: "rating-actions"}, save, next, clear),
    EV.el("p", {class: "rating-keys hint"}, "Keys, outside a text field: p Pass · f Fail · s Save · n Save and next"),
    status);
};

// The details' "Rating" section: the rating, the controls where the page can write, or why it cannot.
EV.ratingSection = function (line, cell, column) {
  const served = !EV.inlined();
  const writable = served && EV.meta("evalh-token") !== null && Boolean(cell.id) && Boolean(EV.shownView);
  const note = served && !writable ? EV.meta("evalh-read-only") : null;
  if (!cell.rating && !writable && !note) return null;
  const section = EV.section("Rating",
    cell.rating ? EV.currentRating(cell.rating) : null,
    writable ? EV.ratingControls(line, cell, column) : null,
    // what `evalh runs rate REF ROW_ID` names
    cell.id ? EV.el("p", {class: "row-id"}, "Row id ", EV.el("code", {}, cell.id)) : null,
    note ? EV.el("p", {class: "rating-note"}, "Read-only: " + note + ".") : null);
  section.classList.add("rating-section");
  return section;
};

// After a write: the page drawn anew from fresh data when the app can (EV.reload keeps the view the URL
// holds, the open result included), else the result's line and the run's summary fetched again, the cell
// and the counts drawn again, the details reopened on the rated (or graded) result.
EV.refreshRated = async function (line, cell, column, message) {
  if (typeof EV.reload === "function") {
    await EV.reload();
    EV.ratingMessage(message);
    return;
  }
  const view = EV.shownView;
  const index = view.lines.indexOf(line);
  const at = line.cells.indexOf(cell);
  const page = await EV.runLines(view.run.ref, index, 1);
  const fresh = page.lines.length ? page.lines[0].cells[at] : null;
  if (index < 0 || at < 0 || !fresh) throw new Error("the result is no longer in this run: reload the page");
  line.cells[at] = fresh;
  Object.assign(view.run, page.run);
  const summary = document.getElementById("summary");
  if (summary) summary.replaceWith(EV.runSummary(view.run));
  const node = EV.cellNodes.get(cell);
  if (node && node.isConnected) {
    const filter = document.getElementById("status-filter");
    const metric = document.getElementById("metric-filter");
    node.replaceWith(EV.matrixCell(line, fresh, column, filter ? EV.STATUS_FILTERS[filter.value] : null,
      metric ? metric.value : ""));
  }
  EV.openDetail(line, EV.full(fresh), column);
  EV.ratingMessage(message);
};

EV.ratingMessage = function (message) {
  const status = document.querySelector("#detail:not([hidden]) .rating-status");
  if (status) {
    status.textContent = message;
    status.focus();
  }
};

(function extendRunPage() {
  const load = EV.loadRun;
  EV.loadRun = async function (ref) {
    const view = await load(ref);
    EV.shownView = view; // the run whose results are rated, and whose lines are fetched again
    return view;
  };
  const matrixCell = EV.matrixCell;
  EV.matrixCell = function (line, sparse, column, statuses, metric) {
    const node = matrixCell(line, sparse, column, statuses, metric);
    if (!sparse) return node;
    EV.cellNodes.set(sparse, node);
    if (sparse.rating) {
      node.classList.add("rated");
      const head = node.querySelector(".cell-head");
      (head || node).append(EV.ratedMark(sparse.rating));
    }
    return node;
  };
  const open = EV.openDetail;
  EV.openDetail = function (line, cell, column) {
    open(line, cell, column);
    const section = EV.ratingSection(line, cell, column);
    if (!section) return;
    const head = document.querySelector("#detail .detail-head");
    if (head) head.after(section);
    else document.getElementById("detail").append(section);
  };
})();

// The review queue: only where the page can write (never in the .html report, nor read-only).
EV.canRate = () => !EV.inlined() && EV.meta("evalh-token") !== null;
if (EV.canRate()) {
  EV.STATUS_FILTERS.unrated = (cell) => !cell.rating;
  EV.STATUS_FILTERS.rated = (cell) => Boolean(cell.rating);
  const toolbar = EV.runToolbar;
  EV.runToolbar = function (state, redraw) {
    const bar = toolbar(state, redraw);
    bar.querySelector("#status-filter").append(EV.el("option", {value: "unrated"}, "Not rated yet"),
      EV.el("option", {value: "rated"}, "Rated"));
    return bar;
  };
}

// Every result the matrix shows (its filters and sort: across the columns of a line, then the lines), as
// {test, repeat, column}, starting after the one in the details and going round to the ones before it.
EV.reviewQueue = function (line, column) {
  const state = EV.shownRun;
  if (!state) return [];
  const visible = EV.visibleColumns(state);
  const statuses = EV.STATUS_FILTERS[state.status];
  const order = [];
  for (const index of EV.filteredLines(state, visible)) {
    const shown = state.view.lines[index];
    for (const {index: c} of visible) {
      const cell = shown.cells[c];
      if (cell && (!statuses || EV.statusMatches(statuses, cell))) {
        order.push({test: shown.test, repeat: shown.repeat, column: c});
      }
    }
  }
  const here = state.view.columns.indexOf(column);
  const at = order.findIndex((k) => k.test === line.test && k.repeat === line.repeat && k.column === here);
  return at < 0 ? order : order.slice(at + 1).concat(order.slice(0, at));
};

// After "Save and next": the first result of the queue still not rated (in the run drawn anew, once all
// its lines are there), opened on the matrix's page that holds it; else the details say none is left.
EV.openNextUnrated = async function (queue) {
  const state = EV.shownRun;
  if (!state) return;
  while (!state.loaded && EV.shownRun === state) await new Promise((resolve) => setTimeout(resolve, 50));
  if (EV.shownRun !== state) return; // the person went to another page meanwhile
  for (const wanted of queue) {
    const index = state.view.lines.findIndex((l) => l.test === wanted.test && l.repeat === wanted.repeat);
    const cell = index < 0 ? null : state.view.lines[index].cells[wanted.column];
    if (!cell || cell.rating) continue;
    const visible = EV.visibleColumns(state);
    const place = EV.filteredLines(state, visible).indexOf(index);
    const page = place < 0 ? state.page : Math.floor(place / state.size);
    if (page !== state.page) EV.changeRun(state, {page});
    EV.openDetail(state.view.lines[index], EV.full(cell), state.view.columns[wanted.column]);
    EV.ratingMessage("Saved. This is the next result not rated yet.");
    return;
  }
  EV.ratingMessage("Saved. No result is left to rate in this view: every result it shows is rated.");
};

// p, f, s, n in the details: Pass, Fail, Save, Save and next (not while typing in a field).
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  const detail = document.getElementById("detail");
  const form = detail && !detail.hidden ? detail.querySelector(".rating-form") : null;
  const target = event.target;
  if (!form || (target !== document.body && !detail.contains(target))) return;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  const which = {p: ".rate-pass", f: ".rate-fail", s: ".rating-save", n: ".rating-next"}[event.key];
  const button = which ? form.querySelector(which) : null;
  if (!button || button.disabled) return;
  event.preventDefault();
  button.click();
});
