"""Two runs compared for the viewer's page: ``evalh diff``'s comparison (:mod:`evalh.store.compare`:
rows matched by test identity, the same groups and tolerance), each change with its column label, and
both runs' summaries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.reports.matrix import column_label
from evalh.reports.viewdata import run_summary
from evalh.store.compare import compare_reports

__all__ = ["compare_runs"]

_GROUPS = ("regressions", "newFailures", "fixes", "scoreChanges", "added", "removed")


def compare_runs(
    baseline: Mapping[str, Any], current: Mapping[str, Any], refs: tuple[str, str]
) -> dict[str, Any]:
    """``Comparison.to_json()`` of the two reports, with ``column`` on every change and the runs'
    summaries (as the history lists them) as ``baseline`` and ``current``."""
    comparison = compare_reports(baseline, current).to_json()
    for group in _GROUPS:
        for change in comparison[group]:
            change["column"] = column_label(change["provider"], change["prompt"])
    comparison["baseline"] = run_summary(baseline, refs[0])
    comparison["current"] = run_summary(current, refs[1])
    return comparison
