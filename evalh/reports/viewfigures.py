"""What the viewer's run page shows beside its lines, computed once in Python from a run's rows: each
column's figures in its header (passes of its results, the pass rate and the mean score) and the
metadata filter's choices (every key of the tests' metadata and the values it takes).

:mod:`evalh.reports.viewdata` adds them to a run read from a report, :mod:`evalh.viewer.pages` to a run
read from the run store (from fields SQLite reads, no row decoded): both from the same verdicts and the
same metadata texts, so a run shows the same figures and choices however it is read. ::

    columns: [{..., text, passed, total, passRate, meanScore}]   (text: the prompt as written)
    metadata: {key: [value, ...]}                                only when a test has metadata
    lines: [{..., metadata: {key: value}}]                       a line's test's, when it has any
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalh.reports.textutil import escape_controls

__all__ = ["Verdict", "line_metadata", "metadata_choices", "metadata_texts", "with_column_figures"]

# One row's verdict: (test, column key, repeat, passed, score); the score NaN when the row has none
Verdict = tuple[int, tuple[int, int], int, bool, float]


def with_column_figures(
    columns: Sequence[Mapping[str, Any]], verdicts: Iterable[Verdict]
) -> list[dict[str, Any]]:
    """``columns`` each with its figures: ``passed`` of ``total`` results (an error is a result that did
    not pass, as promptfoo's header counts it), ``passRate`` (percent; None without results) and
    ``meanScore`` (of the results with a score; None without one)."""
    position = {tuple(column["key"]): index for index, column in enumerate(columns)}
    passed = [0] * len(columns)
    total = [0] * len(columns)
    scores: list[list[float]] = [[] for _ in columns]
    for _test, key, _repeat, verdict, score in verdicts:
        index = position.get(key)
        if index is None:
            continue
        total[index] += 1
        passed[index] += verdict
        if math.isfinite(score):
            scores[index].append(score)
    return [
        {
            **column,
            "passed": passed[index],
            "total": total[index],
            "passRate": 100.0 * passed[index] / total[index] if total[index] else None,
            "meanScore": math.fsum(scores[index]) / len(scores[index]) if scores[index] else None,
        }
        for index, column in enumerate(columns)
    ]


def _value_text(value: Any) -> str:
    """A metadata value as the filter shows and matches it: a string as it is, any other JSON value as
    compact JSON (``3``, ``true``, ``["a", "b"]``); control characters as visible escapes."""
    if isinstance(value, str):
        return escape_controls(value)
    return escape_controls(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))


def metadata_texts(metadata: Mapping[str, Any]) -> dict[str, str]:
    """A test's metadata as the viewer's line holds it: each key's value as text."""
    return {escape_controls(str(key)): _value_text(value) for key, value in metadata.items()}


def line_metadata(metadata: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """A line's share of a test's metadata: ``{"metadata": texts}``, nothing when it has none."""
    return {"metadata": metadata_texts(metadata)} if metadata else {}


def metadata_choices(lines_metadata: Iterable[Mapping[str, str]]) -> dict[str, list[str]]:
    """The metadata filter's choices: every key (sorted) with the values its lines hold (sorted)."""
    choices: dict[str, set[str]] = {}
    for metadata in lines_metadata:
        for key, value in metadata.items():
            choices.setdefault(key, set()).add(value)
    return {key: sorted(choices[key]) for key in sorted(choices)}
