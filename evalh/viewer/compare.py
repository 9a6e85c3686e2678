"""Two runs side by side: each result of the new run paired with the same test × prompt × provider of the
baseline, and what changed.

A result is known by its test (description and vars), its column (``[provider] prompt``) and its repeat,
not by position, so a suite that gained or lost tests still pairs the rest. A *regression* is a result
that passed in the baseline and fails or errors now; *fixed* the reverse; *changed* a score that moved
with the same verdict; *added* and *removed* results present in one run only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["compare_views"]

_SCORE_EPSILON = 1e-9


def _keyed(view: Mapping[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for line in view["lines"]:
        test = json.dumps([line["description"], line["vars"]], sort_keys=True)
        for column, cell in zip(view["columns"], line["cells"], strict=True):
            if cell is not None:
                out.setdefault((test, column["label"], line["repeat"]), {"line": line, "cell": cell})
    return out


def _kind(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    was, now = before["status"] == "PASS", after["status"] == "PASS"
    if was and not now:
        return "regression"
    if now and not was:
        return "fixed"
    if before["status"] != after["status"] or abs(before["score"] - after["score"]) > _SCORE_EPSILON:
        return "changed"
    return "same"


def _side(cell: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    return {"status": cell["status"], "score": cell["score"], "reason": cell.get("reason", "")}


def compare_views(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Every result of either run, paired (see the module docstring), regressions first."""
    before, after = _keyed(baseline), _keyed(current)
    pairs: list[dict[str, Any]] = []
    for key in [*after, *(k for k in before if k not in after)]:
        old, new = before.get(key), after.get(key)
        line = (new or old or {})["line"]
        kind = _kind(old and old["cell"], new and new["cell"])
        pairs.append(
            {
                "kind": kind,
                "test": line["test"],
                "description": line["description"],
                "vars": line["vars"],
                "column": key[1],
                "repeat": key[2],
                "before": _side(old and old["cell"]),
                "after": _side(new and new["cell"]),
            }
        )
    order = {"regression": 0, "fixed": 1, "changed": 2, "added": 3, "removed": 4, "same": 5}
    pairs.sort(key=lambda pair: order[pair["kind"]])  # stable: the new run's order within each kind
    counts = {kind: 0 for kind in order}
    for pair in pairs:
        counts[pair["kind"]] += 1
    return {"baseline": baseline["run"], "current": current["run"], "counts": counts, "pairs": pairs}
