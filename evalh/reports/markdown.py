"""A run as GitHub-flavoured Markdown (``-o summary.md``): a CI job summary or a pull-request comment.

The layout: a headline (pass rate with its 95% interval and counts, the run's id, how many outputs came
from the cache), the pass rate of each provider x prompt column, with ``--repeat`` each test's pass rate
over its repeats (with its interval, a flaky mark and its verdict), the named metrics, with
``--baseline`` what changed since that run (regressions, new failing tests, fixes, score changes), then
the failed rows with each failed assertion's reason, and the errored rows with their error. A list longer
than :data:`OPEN_LIMIT` rows is folded in a ``<details>`` block.

Every text that comes from the run (test descriptions and vars, labels, reasons quoting an output,
error texts) is untrusted and goes through :func:`markdown_text`: redacted of the run's secret values
*before* it is escaped (an escaped secret would no longer match the redaction of the written bytes),
made one line, cut, and escaped so that GitHub renders it as the same plain text: no HTML (``<``, ``>``
and ``&`` as entities), no Markdown markup, math or table break (punctuation backslash-escaped), no
autolink (``:`` and ``.`` escaped), no @mention nor issue reference (a zero-width space after ``@`` and
``#``). The only markup in the file is evalh's own.

Every table is cut to fit a character budget of its own (:data:`FIGURES_BUDGET` for the columns and the
named metrics, :data:`BUDGET` for each list of rows), and all together to what the rest of the file leaves
of :data:`TOTAL_BUDGET`, so the whole file stays under GitHub's 65,536 characters for a comment even with
thousands of columns or metrics, failures, errors and every group of a comparison; a cut table ends with
a line saying how many more there are, and the full run is in the JSON report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalh.model import Column, GradedAssertion, RunRecord, Status, TestRepeats, TestResult
from evalh.model.verdict import run_passed
from evalh.reports.repeats_view import FLAKY_MARK, repeats_headline
from evalh.reports.textutil import collapse_whitespace, escape_controls, interval_text, output_text, truncate
from evalh.secrets import redact_text

__all__ = ["OPEN_LIMIT", "TOTAL_BUDGET", "escape_inline", "markdown_text", "to_markdown"]

OPEN_LIMIT = 10  # rows shown unfolded; a longer list goes in <details>
NAME_LIMIT = 120  # characters of a test name, a label, a metric name
REASON_LIMIT = 300  # characters of one reason or error
OUTPUT_LIMIT = 200  # characters of a failed row's output
ASSERTIONS_LISTED = 5  # failed assertions listed per row
BUDGET = 24_000  # characters of one list (failures, errors, each comparison group)
FIGURES_BUDGET = 8_000  # characters of the columns' table, and of the named metrics' table
TOTAL_BUDGET = 60_000  # characters of the whole file: a GitHub comment holds at most 65,536

_ZERO_WIDTH_SPACE = "\u200b"
_ESCAPES = {
    **{ord(c): "\\" + c for c in "\\`*_{}[]()+-.!|~:$^="},
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    ord("&"): "&amp;",
    ord("@"): "@" + _ZERO_WIDTH_SPACE,
    ord("#"): "\\#" + _ZERO_WIDTH_SPACE,
}


def escape_inline(text: str) -> str:
    """``text`` (one line) as inline Markdown that GitHub renders as the same plain text."""
    return text.translate(_ESCAPES)


def markdown_text(value: Any, limit: int = REASON_LIMIT) -> str:
    """Untrusted ``value`` as inline Markdown that renders as its plain text, on one line, at most
    ``limit`` characters of it (secret values redacted first)."""
    text = escape_controls(collapse_whitespace(redact_text(output_text(value))), one_line=True)
    return escape_inline(truncate(text, limit))


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """A GFM table; ``align`` has one letter per column, ``r`` for right-aligned numbers."""
    rules = ["--:" if (align[i : i + 1] == "r") else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rules) + " |"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _percent(value: float) -> str:
    return f"{value:.1f}%"


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _test_name(row: TestResult) -> str:
    """The row's test as people know it: its description, else its vars, else its number."""
    test = row.test
    if test.description:
        name = test.description
    elif test.vars:
        name = ", ".join(f"{key}={output_text(value)}" for key, value in test.vars.items())
    else:
        name = f"test {test.index + 1}"
    suffix = f" (repeat {row.repeat_index + 1})" if row.repeat_index else ""
    return markdown_text(name, NAME_LIMIT) + suffix


def _headline(run: RunRecord, eval_id: str | None) -> list[str]:
    figures = run.aggregates.figures
    rows, passed = len(run.results), run.count(Status.PASS)
    mark = "✅" if run_passed(run) else "❌"
    title = markdown_text(run.suite.description or "evalh run", NAME_LIMIT)
    interval = escape_inline(interval_text(run.aggregates.pass_rate_interval))
    counts = [
        f"**{passed} of {rows} passed ({_percent(run.pass_rate)} {interval})**",
        f"{run.count(Status.FAIL)} failed",
        f"{run.count(Status.ERROR)} errors",
        f"{run.duration_ms / 1000:.1f} s",
    ]
    if figures.mean_score is not None:
        counts.insert(3, f"mean score {figures.mean_score:.2f}")
    if eval_id:
        counts.append(f"run {markdown_text(eval_id, NAME_LIMIT)}")
    lines = [f"## {mark} {title}", "", " · ".join(counts), *_cache_lines(run)]
    if run.interrupted:
        signal = markdown_text(run.interrupted_by or "a signal", NAME_LIMIT)
        lines += ["", "> [!WARNING]", f"> Interrupted by {signal}: {run.not_run} planned rows did not run."]
    return lines


def _cache_lines(run: RunRecord) -> list[str]:
    """The run's cache sentence: a note when outputs came from the cache (they may be stale)."""
    share = run.cache_share
    sentence = share.sentence()
    if sentence is None:
        return []
    text = escape_inline(sentence[0].upper() + sentence[1:] + ".")
    return ["", "> [!NOTE]", f"> {text}"] if share.from_cache else ["", text]


def _column_row(column: Column) -> list[str]:
    figures = column.figures
    return [
        markdown_text(column.provider.display, NAME_LIMIT),
        markdown_text(column.prompt.label, NAME_LIMIT),
        _percent(figures.pass_rate),
        str(figures.passed),
        str(figures.failed),
        str(figures.errors),
        _score(figures.mean_score),
    ]


def _columns(run: RunRecord, budget: _Budget) -> list[str]:
    columns = run.aggregates.columns
    if not columns:
        return []
    header = ["Provider", "Prompt", "Pass rate", "Passed", "Failed", "Errors", "Mean score"]
    rows = [_column_row(column) for column in columns]
    title = "Pass rate by provider and prompt"
    return _listed(title, header, rows, "..rrrrr", budget, cap=FIGURES_BUDGET, noun="columns", fold=False)


def _repeats(run: RunRecord, budget: _Budget) -> list[str]:
    """Each test over its repeats (only when the run repeats), by test."""
    repeats = run.aggregates.repeats
    if repeats is None:
        return []
    names = {row.test.index: _test_name(row) for row in run.results if not row.repeat_index}
    columns = {column.key: column for column in run.aggregates.columns}
    several = len(columns) > 1
    rows = []
    for test in repeats.tests:
        column = columns.get((test.provider_index, test.prompt_index))
        where = [markdown_text(column.name if column else "", NAME_LIMIT)] if several else []
        rows.append(_repeat_row(test, names.get(test.test_index, f"test {test.test_index + 1}"), where))
    header = ["Test", *(["Column"] if several else []), "Passes", "Pass rate", "Flaky", "Verdict"]
    title = escape_inline(repeats_headline(repeats))
    return _listed(title, header, rows, "." + "." * several + "r...", budget, noun="tests")


def _repeat_row(test: TestRepeats, name: str, where: list[str]) -> list[str]:
    rate = f"{100 * test.pass_rate:.0f}% {escape_inline(interval_text(test.pass_rate_interval))}"
    verdict = "✅" if test.passed else "❌"
    return [name, *where, f"{test.passes}/{test.runs}", rate, FLAKY_MARK if test.flaky else "", verdict]


def _metrics(run: RunRecord, budget: _Budget) -> list[str]:
    named = run.aggregates.named_scores
    if not named:
        return []
    rows = [
        [markdown_text(name, NAME_LIMIT), _score(s.mean), _score(s.min), _score(s.max), str(s.count)]
        for name, s in named.items()
    ]
    header = ["Metric", "Mean", "Min", "Max", "Rows"]
    return _listed(
        "Named metrics", header, rows, ".rrrr", budget, cap=FIGURES_BUDGET, noun="metrics", fold=False
    )


class _Budget:
    """The characters of :data:`TOTAL_BUDGET` the lists may still use, written ones subtracted."""

    def __init__(self, used: Iterable[Sequence[str]]) -> None:
        self.left = TOTAL_BUDGET
        for block in used:
            self.spend(block)

    def spend(self, lines: Sequence[str]) -> None:
        self.left -= sum(len(line) + 1 for line in lines) + 2  # blocks are joined by a blank line

    def for_a_list(self, cap: int = BUDGET) -> int:
        return max(0, min(cap, self.left))


def _listed(
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str,
    budget: _Budget,
    *,
    cap: int = BUDGET,
    noun: str = "rows",
    fold: bool = True,
) -> list[str]:
    """``rows`` as a table under ``title``, cut to the budget (at most ``cap`` characters), folded
    when longer than OPEN_LIMIT (with ``fold``); ``noun`` names what the rows are."""
    limit = budget.for_a_list(cap) - 2 * len(title) - 200  # the title, the fold, the note on what is cut
    shown: list[Sequence[str]] = []
    used = sum(len(cell) + 3 for cell in header) * 2
    for row in rows:
        used += sum(len(cell) for cell in row) + 3 * len(row) + 2  # as _table writes it
        if used > limit:
            break
        shown.append(row)
    table = _table(header, shown, align) if shown else []
    if len(shown) < len(rows):
        every = "every row" if noun == "rows" else f"all the {noun}"
        table += ["", f"… and {len(rows) - len(shown)} more (the JSON report has {every})."]
    if len(rows) <= OPEN_LIMIT or not fold:
        lines = [f"### {title}", "", *table]
    else:
        lines = [
            f"### {title}",
            "",
            "<details>",
            f"<summary>{len(rows)} {noun}</summary>",
            "",
            *table,
            "",
            "</details>",
        ]
    budget.spend(lines)
    return lines


def _failed_assertions(graded: Sequence[GradedAssertion]) -> list[GradedAssertion]:
    """The failed assertions, an assert-set's failed children after it (depth-first)."""
    failed: list[GradedAssertion] = []
    for item in graded:
        if not item.passed:
            failed.append(item)
            failed.extend(_failed_assertions(item.children))
    return failed


def _reasons(row: TestResult) -> str:
    failed = _failed_assertions(row.assertions)
    if not failed:
        return markdown_text(row.reason)
    lines = [
        f"**{markdown_text(item.spec.full_type, NAME_LIMIT)}**: {markdown_text(item.reason)}"
        for item in failed[:ASSERTIONS_LISTED]
    ]
    if len(failed) > ASSERTIONS_LISTED:
        lines.append(f"… and {len(failed) - ASSERTIONS_LISTED} more")
    return "<br>".join(lines)


def _where(row: TestResult) -> list[str]:
    return [
        _test_name(row),
        markdown_text(row.provider.display, NAME_LIMIT),
        markdown_text(row.prompt.label, NAME_LIMIT),
    ]


def _failures(run: RunRecord, budget: _Budget) -> list[str]:
    rows = [
        [*_where(r), _score(r.score), _reasons(r), markdown_text(r.output, OUTPUT_LIMIT)]
        for r in run.results
        if r.status is Status.FAIL
    ]
    if not rows:
        return []
    header = ["Test", "Provider", "Prompt", "Score", "Failed assertions", "Output"]
    return _listed(f"Failures ({len(rows)})", header, rows, "...r..", budget)


def _ratings(run: RunRecord, budget: _Budget) -> list[str]:
    """The rows a person rated (``evalh runs rate``, the viewer): their verdict, who, and why."""
    rows = [
        [
            *_where(r),
            "pass" if r.rating.passed else "fail",
            _score(r.rating.score),
            markdown_text(r.rating.reviewer, NAME_LIMIT),
            markdown_text(r.rating.comment),
        ]
        for r in run.results
        if r.rating is not None
    ]
    if not rows:
        return []
    header = ["Test", "Provider", "Prompt", "Rating", "Score", "Reviewer", "Comment"]
    return _listed(f"Rated by people ({len(rows)})", header, rows, "....r..", budget)


def _errors(run: RunRecord, budget: _Budget) -> list[str]:
    rows = [
        [*_where(r), markdown_text(r.error or r.reason or "Evaluation error")]
        for r in run.results
        if r.status is Status.ERROR
    ]
    if not rows:
        return []
    return _listed(f"Errors ({len(rows)})", ["Test", "Provider", "Prompt", "Error"], rows, "", budget)


def _state(state: Mapping[str, Any] | None) -> str:
    if not state:
        return ""
    score = state.get("score")
    shown = _score(score) if isinstance(score, int | float) else ""
    rated = " (rated)" if state.get("rated") else ""  # a person's verdict (evalh runs rate)
    return f"{str(state.get('status', '')).upper()} {shown}".strip() + rated


_GROUPS: tuple[tuple[str, str], ...] = (
    ("regressions", "Regressions: passed in the baseline, fail now"),
    ("newFailures", "New tests that fail"),
    ("fixes", "Fixed: failed in the baseline, pass now"),
    ("scoreChanges", "Score changes"),
)


def _change_row(change: Mapping[str, Any]) -> list[str]:
    after = change.get("after") or {}
    reason = after.get("reason") if after.get("status") != "pass" else ""
    return [
        markdown_text(change.get("test", ""), NAME_LIMIT),
        markdown_text(change.get("provider", ""), NAME_LIMIT),
        markdown_text(change.get("prompt", ""), NAME_LIMIT),
        _state(change.get("before")),
        _state(after),
        markdown_text(reason or ""),
    ]


def _comparison(comparison: Mapping[str, Any] | None, budget: _Budget) -> list[str]:
    """What changed since the baseline, from :meth:`evalh.store.compare.Comparison.to_json`."""
    if comparison is None:
        return []
    base, now = comparison["baseline"], comparison["current"]
    failed = int(comparison["newFailureCount"])
    verdict = (
        f"❌ **{failed} new failure(s) since the baseline.**"
        if failed
        else "✅ No new failures since the baseline."
    )
    counts = " · ".join(
        f"{len(comparison[key])} {label}"
        for key, label in (
            ("regressions", "regressions"),
            ("newFailures", "new failing tests"),
            ("fixes", "fixed"),
            ("scoreChanges", "score changes"),
            ("added", "new passing tests"),
            ("removed", "removed"),
        )
    )
    lines = [
        f"### Compared with the baseline {markdown_text(base['id'], NAME_LIMIT)}",
        "",
        f"Pass rate {_percent(base['passRate'])} ({base['rows']} rows) → {_percent(now['passRate'])} "
        f"({now['rows']} rows) · {counts} · {comparison['unchanged']} unchanged",
        "",
        verdict,
    ]
    statistics = comparison.get("statistics") or {}
    tested = statistics.get("tests")
    lines += [line for sentence in statistics.get("sentences", ()) for line in ("", markdown_text(sentence))]
    budget.spend(lines)
    if tested is not None:  # with repeats tests are compared, not rows: a flipped row is no finding
        lines += _tested(tested, statistics, budget)
    header = ["Test", "Provider", "Prompt", "Before", "Now", "Reason"]
    for key, title in _GROUPS:
        changes = comparison[key]
        if changes and not (tested is not None and key in ("regressions", "fixes")):
            rows = [_change_row(change) for change in changes]
            lines += ["", *_listed(f"{title} ({len(changes)})", header, rows, "", budget)]
    return lines


_VERDICTS: tuple[tuple[str, str], ...] = (
    ("regressed", "Regressed beyond chance"),
    ("improved", "Improved beyond chance"),
    ("inconclusive", "Inconclusive (not significant once the tests compared are counted)"),
)


def _tested(tests: list[Mapping[str, Any]], statistics: Mapping[str, Any], budget: _Budget) -> list[str]:
    """The tests compared over their repeats (store/compare_stats.py), one table per verdict."""
    header = ["Test", "Provider", "Prompt", "Before", "Now", "Change [95%]", "p (Holm)"]
    lines: list[str] = []
    for verdict, title in _VERDICTS:
        chosen = [test for test in tests if test.get("verdict") == verdict]
        if chosen:
            rows = [_tested_row(test) for test in chosen]
            titled = f"{title} ({len(chosen)}; alpha {statistics.get('alpha')})"
            lines += ["", *_listed(titled, header, rows, "", budget)]
    return lines


def _tested_row(test: Mapping[str, Any]) -> list[str]:
    def counts(side: Mapping[str, Any]) -> str:
        return f"{side.get('passes')}/{side.get('runs')} {_percent(100 * float(side.get('passRate', 0)))}"

    low, high = test.get("changeInterval") or (0.0, 0.0)
    change = (
        f"{100 * float(test.get('change', 0)):+.0f} [{100 * float(low):+.0f} to {100 * float(high):+.0f}]"
    )
    return [
        markdown_text(test.get("test", ""), NAME_LIMIT),
        markdown_text(test.get("provider", ""), NAME_LIMIT),
        markdown_text(test.get("prompt", ""), NAME_LIMIT),
        counts(test.get("before") or {}),
        counts(test.get("after") or {}),
        change,
        f"{float(test.get('pValue', 1)):.2g}",
    ]


def to_markdown(
    run: RunRecord, *, eval_id: str | None = None, comparison: Mapping[str, Any] | None = None
) -> str:
    """The run's Markdown summary; ``comparison`` is a baseline comparison's JSON (``--baseline``)."""
    headline = _headline(run, eval_id)
    budget = _Budget([headline])
    figures = (headline, _columns(run, budget), _repeats(run, budget), _metrics(run, budget))
    # in this order: the comparison's lists first, then the failures, then the errors
    sections = (
        *figures,
        _comparison(comparison, budget),
        _failures(run, budget),
        _errors(run, budget),
        _ratings(run, budget),
    )
    blocks = [block for block in sections if block]
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"
