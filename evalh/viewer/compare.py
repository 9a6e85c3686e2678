"""Two runs compared for the viewer's page: ``evalh diff``'s comparison (:mod:`evalh.store.compare`:
rows matched by test identity, the same groups and tolerance), each change with its column label, the
test's vars and both results as the matrix draws them (output, assertions, reasons: what the details
panel shows), and both runs' summaries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from evalh.reports.codec_read import column_indexes
from evalh.reports.matrix import column_label
from evalh.reports.viewdata import run_summary, view_lines
from evalh.store.compare import RunRows, compare_rows, keyed_rows

__all__ = ["MAX_DETAILED_CHANGES", "ComparedRun", "compare_runs"]

_GROUPS = ("regressions", "newFailures", "fixes", "scoreChanges", "added", "removed")
# the most changes whose results come whole (output, assertions, vars), the first in the page's order
# (regressions and new failures first): two runs of 50,000 rows that all changed would otherwise send both
# runs whole
MAX_DETAILED_CHANGES = 2000


class ComparedRun(NamedTuple):
    """One run, for a comparison: its JSON report (its rows may be left out), its rows (which may be read
    more than once) and the file that names it when it has no description (its config, or the report
    file it was read from)."""

    report: dict[str, Any]
    rows: RunRows
    source: str | None


def compare_runs(baseline: ComparedRun, current: ComparedRun, refs: tuple[str, str]) -> dict[str, Any]:
    """``Comparison.to_json()`` of the two runs (their rows are read twice: once to compare, once for
    the changed results' cells), with ``column``, ``description`` and ``vars`` on every change and the
    viewer's ``cell`` in its ``before`` and ``after`` (the first :data:`MAX_DETAILED_CHANGES` changes;
    ``detailed``: how many), and the runs' summaries (as the history lists them) as ``baseline`` and
    ``current``."""
    comparison = compare_rows(baseline.rows, current.rows).to_json()
    changes = [change for group in _GROUPS for change in comparison[group]]
    detailed = changes[:MAX_DETAILED_CHANGES]
    comparison["detailed"] = len(detailed)
    for side, run in (("before", baseline.rows), ("after", current.rows)):
        wanted = {change["key"] for change in detailed if change[side] is not None}
        lines = _changed_lines(run.rows, wanted) if wanted else {}  # no change: no second read
        for change in detailed:
            line = lines.get(change["key"])
            if line is not None:
                change[side]["cell"] = line["cells"][0]
                change.setdefault("description", line["description"])
                change.setdefault("vars", line["vars"])
    for change in changes:
        change["column"] = column_label(change["provider"], change["prompt"])
    comparison["baseline"] = run_summary(baseline.report, refs[0], source=baseline.source)
    comparison["current"] = run_summary(current.report, refs[1], source=current.source)
    return comparison


def _changed_lines(rows: Iterable[Mapping[str, Any]], wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The matrix line (its one cell) of each row whose comparison key is in ``wanted``: only the changed
    results are kept, so two large runs with few changes are never held whole."""
    found: dict[str, dict[str, Any]] = {}
    for key, row in keyed_rows(rows):
        if key in wanted:
            (found[key],) = view_lines([row], [{"key": list(column_indexes(row))}])
    return found
