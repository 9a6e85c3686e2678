"""Two runs compared for the viewer's page: ``evalh diff``'s comparison (:mod:`evalh.store.compare`:
rows matched by test identity, the same groups and tolerance), each change with its column label, and
both runs' summaries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.reports.matrix import column_label
from evalh.reports.viewdata import run_summary
from evalh.store.compare import RunRows, compare_rows

__all__ = ["compare_runs"]

_GROUPS = ("regressions", "newFailures", "fixes", "scoreChanges", "added", "removed")


def compare_runs(
    baseline: tuple[Mapping[str, Any], RunRows],
    current: tuple[Mapping[str, Any], RunRows],
    refs: tuple[str, str],
) -> dict[str, Any]:
    """``Comparison.to_json()`` of the two runs (each: its report, whose rows are not read, and its
    rows), with ``column`` on every change and the runs' summaries (as the history lists them) as
    ``baseline`` and ``current``."""
    comparison = compare_rows(baseline[1], current[1]).to_json()
    for group in _GROUPS:
        for change in comparison[group]:
            change["column"] = column_label(change["provider"], change["prompt"])
    comparison["baseline"] = run_summary(baseline[0], refs[0])
    comparison["current"] = run_summary(current[0], refs[1])
    return comparison
