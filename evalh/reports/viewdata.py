"""A JSON report (``-o run.json``, or a run from the store in the same shape) as the data of the viewer
(``evalh view``) and of the HTML report, which is the same viewer in one file.

The viewer draws a run as a matrix: one line per test (and repeat), one column per prompt × provider,
each cell one result row. :func:`run_view` turns the report into exactly that, once, in Python, so the
browser only filters, sorts and draws::

    {run: {summary, cache: sentence}, columns: [{label, prompt, provider, text, figures...}],
     metrics: [names], lines: [{test, repeat, description, vars: {name: text}, cells: [cell | null per
     column], metadata?}], metadata?: {key: [values]},
     repeats: {...}}     only when the run has repeats: see :func:`repeat_figures`

(each column's figures and the metadata filter's choices: :mod:`evalh.reports.viewfigures`)

Every text a page shows is a string here (outputs and vars that are JSON values become compact JSON);
the browser sets it as text, never as markup. A cell carries all the detail panel needs: the rendered
prompt, the output, every assertion with its score, threshold and reason, the judge's prompt and reply,
tokens, cost and latency, a traced row's spans (``trace``, the report's own form: the timeline
draws it and offers it for download as it is), a rated row's rating (``rating``: pass, score, comment,
reviewer, ratedAt, as ``codec_read.row_rating`` reads it) and, in the pages ``evalh view`` serves, the
row's ``id`` (what a rating's write names). Keys holding their default value (no error, zero
cost, weight 1, ...) are left out, which halves a large run's data; the page fills them back in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from evalh.model import CacheShare, Status
from evalh.providers.tools import tool_call_lines
from evalh.reports.codec_read import (
    column_indexes,
    component_children,
    row_components,
    row_cost,
    row_error,
    row_grading,
    row_id,
    row_latency_ms,
    row_line,
    row_metadata,
    row_named_scores,
    row_own_description,
    row_prompt,
    row_provider,
    row_rating,
    row_response,
    row_score,
    row_status,
    row_token_usage,
    row_trace,
    row_vars,
)
from evalh.reports.matrix import column_label
from evalh.reports.textutil import escape_controls, output_text, rate_text
from evalh.reports.viewfigures import Verdict, line_metadata, metadata_choices, with_column_figures
from evalh.stats.repeats import RepeatStats, repeat_stats_by_key, suite_pass_rate_interval

__all__ = [
    "Verdict",
    "line_key",
    "repeat_figures",
    "run_columns",
    "run_name",
    "run_summary",
    "run_view",
    "view_lines",
]


def _is_chat(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value) and bool(value)


def _text(value: Any) -> str:
    """Text to show: chat messages as ``[role]`` blocks, other JSON values as indented JSON, control
    characters and lone surrogates as visible escapes (``\\x1b``), as the other reports show them."""
    if _is_chat(value):
        return "\n\n".join(f"[{m['role']}]\n{_text(m.get('content'))}" for m in value)
    if isinstance(value, list | dict):
        return escape_controls(json.dumps(value, ensure_ascii=False, indent=2, default=str))
    return escape_controls(output_text(value))


def _prompt_text(raw: Any) -> str:
    """The rendered prompt: a chat prompt is stored as its messages' JSON text; shown as messages."""
    if isinstance(raw, str) and raw.startswith("[{"):
        try:
            messages = json.loads(raw)
        except ValueError:
            return _text(raw)
        return _text(messages) if _is_chat(messages) else _text(raw)
    return _text(raw)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _tokens(usage: Any) -> dict[str, Any]:
    usage = usage if isinstance(usage, Mapping) else {}
    return {key: usage.get(key) or 0 for key in ("total", "prompt", "completion", "cached")}


# Left out of a cell or an assertion when they hold these values (the page puts them back): a 10,000-row
# run's data is half the size, and the page (the HTML report above all) is read that much sooner.
_DEFAULTS: dict[str, Any] = {
    "error": False, "skipped": False, "cached": False, "depth": 0, "weight": 1.0, "latencyMs": 0.0,
    "cost": 0.0, "prompt": "", "reason": "", "metric": None, "value": None, "judge": None, "threshold": None,
    "namedScores": {},
}  # fmt: skip
_NO_TOKENS = {"total": 0, "prompt": 0, "completion": 0, "cached": 0}


def _compact(item: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in item.items()
        if value is not None and not (key in _DEFAULTS and value == _DEFAULTS[key]) and value != _NO_TOKENS
    }


def _assertion(component: Mapping[str, Any], depth: int) -> dict[str, Any]:
    spec = component.get("assertion") or {}
    details = component.get("metadata") or {}
    threshold = details.get("threshold", spec.get("threshold"))
    judge = {
        "grader": _text(details.get("grader")) or None,
        "prompt": _text(details.get("grading_prompt")) or None,
        "reply": _text(details.get("grader_reply")) or None,
        "steps": [
            {"prompt": _text(step.get("prompt")), "reply": _text(step.get("reply"))}
            for step in details.get("steps") or ()
            if isinstance(step, Mapping)
        ],
    }
    return _compact(
        {
            "type": str(spec.get("type", "?")),
            "pass": bool(component.get("pass")),
            "error": bool(component.get("error")),
            "skipped": component.get("skipped") is True,
            "score": _number(component.get("score")),
            "threshold": _number(threshold),
            "weight": _number(spec.get("weight", 1)),
            "metric": spec.get("metric"),
            "value": _text(spec.get("value")) if spec.get("value") is not None else None,
            "reason": _text(component.get("reason")),
            "depth": depth,
            "judge": judge if judge["prompt"] or judge["reply"] else None,
            "tokens": _tokens(component.get("tokensUsed")),
        }
    )


def _assertions(flat: Sequence[Any], depth: int = 0) -> list[dict[str, Any]]:
    """The report lists components flattened: an assert-set, then its descendants right after it (its own
    ``componentResults`` holds the same descendants), so the next ``len(componentResults)`` entries are
    its children; they are shown once, indented."""
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(flat):
        component = flat[index]
        if not isinstance(component, Mapping):
            index += 1
            continue
        children = len(component_children(component))
        out.append(_assertion(component, depth))
        out.extend(_assertions(flat[index + 1 : index + 1 + children], depth + 1))
        index += 1 + children
    return out


def _cell(row: Mapping[str, Any], row_ids: bool = False) -> dict[str, Any]:
    """A row as the viewer draws it: with its rating when it is rated (the verdict is already the rated
    one), and its ``id`` when ``row_ids`` (the served pages of stored runs, whose rows can be rated; the
    HTML report, which cannot write, leaves it out and keeps its size)."""
    cell = _graded_cell(row)
    rating = row_rating(row)
    if rating is not None:
        cell["rating"] = rating
    return {"id": row_id(row), **cell} if row_ids else cell


def _graded_cell(row: Mapping[str, Any]) -> dict[str, Any]:
    response = row_response(row)
    grading = row_grading(row)
    status = row_status(row).value
    token_usage = row_token_usage(row)
    output = response.get("output")
    return _compact(
        {
            "status": status,
            "score": _number(row_score(row)) or 0.0,
            "output": _text(output),
            "calls": [_text(line) for line in lines] if (lines := tool_call_lines(output)) else None,
            "reason": "" if status == "PASS" else _text(row_error(row) or grading.get("reason")),
            "error": _text(response.get("error")) or None,
            "namedScores": {str(k): _number(v) for k, v in row_named_scores(row).items()},
            "prompt": _prompt_text((row_prompt(row) or {}).get("raw")),
            "latencyMs": _number(row_latency_ms(row)) or 0.0,
            "cost": _number(row_cost(row)) or 0.0,
            "cached": bool(response.get("cached")),
            "tokens": _tokens(response.get("tokenUsage") or token_usage),
            "gradingTokens": _tokens(token_usage.get("assertions")),
            "assertions": _assertions(row_components(row)),
            "trace": row_trace(row),  # as the report holds it: the timeline's data and its download
        }
    )


def run_columns(results: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The matrix columns: the report's ``prompts``, and any other column a row of ``rows`` is in."""
    columns: dict[tuple[int, int], dict[str, Any]] = {}
    for prompt in results.get("prompts") or ():
        key = column_indexes(prompt)
        columns[key] = {
            "prompt": str(prompt.get("label", "")),
            "provider": str(prompt.get("provider", "")),
            "text": _text(prompt.get("raw", "")),  # the prompt as written: the header's hover
        }
    for row in rows:  # a report without ``prompts`` (a hand-made or older file): columns from the rows
        key = column_indexes(row)
        if key not in columns:
            provider = row_provider(row) or {}
            label = (row_prompt(row) or {}).get("label", "")
            columns[key] = {
                "prompt": str(label),
                "provider": str(provider.get("label") or provider.get("id")),
                "text": str(label),  # a row holds its prompt rendered for its test, not as written
            }
    ordered = sorted(columns)
    return [
        {
            "key": list(key),
            **columns[key],
            "label": column_label(columns[key]["provider"], columns[key]["prompt"]),
        }
        for key in ordered
    ]


def run_name(description: str | None, source: str | None, ref: str) -> str:
    """What the viewer calls a run: its description, else the file name of its config (or of the
    report file it was read from: ``source``), else its ref; never nothing."""
    return description or (PurePath(source).name if source else "") or ref


def run_summary(report: Mapping[str, Any], ref: str, *, source: str | None = None) -> dict[str, Any]:
    """The figures the run history lists, from a report (``source``: see :func:`run_name`)."""
    results = report.get("results") or {}
    stats = results.get("stats") or {}
    extra = results.get("evalh") or {}
    config = report.get("config") or {}
    passed, failed, errors = (int(stats.get(k) or 0) for k in ("successes", "failures", "errors"))
    total = passed + failed + errors
    description = _text(config.get("description")) if isinstance(config, Mapping) else ""
    return {
        "ref": ref,
        "evalId": report.get("evalId"),
        "description": description,
        "name": run_name(description, source, ref),
        "timestamp": results.get("timestamp"),
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "rows": total,
        "passRate": _number(extra.get("passRate")) if "passRate" in extra else _rate(passed, total),
        "durationMs": _number(stats.get("durationMs")) or 0.0,
        "interrupted": bool(extra.get("interrupted")),
        "interruptedBy": extra.get("interruptedBy"),
        "notRun": int(extra.get("notRun") or 0),
        "cache": _cache_sentence(extra.get("cache")),
    }


def _cache_sentence(block: Any) -> str | None:
    """The run's cache sentence in evalh's own words from the report's figures (never the file's text)."""
    share = CacheShare.from_json(block)
    return share.sentence() if share is not None else None


def _rate(passed: int, total: int) -> float:
    return 100.0 * passed / total if total else 0.0


def run_view(report: Mapping[str, Any], ref: str) -> dict[str, Any]:
    """The whole run as the viewer draws it (see the module docstring). The report's rows are read
    once, one at a time (they may come from a generator): only the lines are kept."""
    results = report.get("results") or {}
    rows = (row for row in results.get("results") or () if isinstance(row, Mapping))
    listed = {column_indexes(prompt) for prompt in results.get("prompts") or ()}
    metrics: dict[str, None] = {}
    verdicts: list[Verdict] = []
    lines, firsts = _lines(rows, metrics, listed, verdicts)
    columns = run_columns(results, firsts)
    placed = _placed(lines, columns)
    view: dict[str, Any] = {
        "run": run_summary(report, ref),
        "columns": with_column_figures(columns, verdicts),
        "metrics": sorted(metrics),
        "lines": placed,
    }
    if choices := metadata_choices(line["metadata"] for line in placed if "metadata" in line):
        view["metadata"] = choices
    repeats = repeat_figures(verdicts, columns)
    return view if repeats is None else {**view, "repeats": repeats}


def view_lines(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[Mapping[str, Any]],
    metrics: dict[str, None] | None = None,
    *,
    row_ids: bool = False,
) -> list[dict[str, Any]]:
    """The matrix lines of ``rows`` (in the order they are stored), in test order; every metric name
    met is added to ``metrics``; ``row_ids``: each cell carries its row's ``id``. A line is made whole
    from its rows alone, so a page of lines (the viewer's) is made from the rows of those lines."""
    return _placed(_lines(rows, {} if metrics is None else metrics, set(), [], row_ids)[0], columns)


def _lines(
    rows: Iterable[Mapping[str, Any]],
    metrics: dict[str, None],
    listed: set[tuple[Any, Any]],
    verdicts: list[Verdict],
    row_ids: bool = False,
) -> tuple[dict[tuple[int, int], dict[str, Any]], list[Mapping[str, Any]]]:
    """The lines of ``rows`` with their cells by column key, and the first row of each column not in
    ``listed`` (to label it); each row's verdict is added to ``verdicts``."""
    lines: dict[tuple[int, int], dict[str, Any]] = {}
    firsts: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for row in rows:
        key = line_key(row)
        line = lines.get(key)
        if line is None:
            variables = row_vars(row) or {}
            line = lines[key] = {
                "test": key[0],
                "repeat": key[1],
                "description": _text(row_own_description(row)),
                "vars": {str(name): _text(value) for name, value in variables.items()},
                "cells": {},
                **line_metadata(row_metadata(row)),
            }
        cell = _cell(row, row_ids)
        metrics.update(dict.fromkeys(cell.get("namedScores", ())))
        column = column_indexes(row)
        line["cells"][column] = cell
        score = _number(row_score(row))
        verdicts.append(
            (key[0], column, key[1], row_status(row) is Status.PASS, math.nan if score is None else score)
        )
        if column not in listed and column not in firsts:
            firsts[column] = row
    return lines, list(firsts.values())


def _placed(
    lines: dict[tuple[int, int], dict[str, Any]], columns: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The lines in test order, each with a cell (or None) per column."""
    keys = [tuple(column["key"]) for column in columns]
    for line in lines.values():
        cells = line["cells"]
        line["cells"] = [cells.get(key) for key in keys]
    return [lines[key] for key in sorted(lines)]


def line_key(row: Mapping[str, Any]) -> tuple[int, int]:
    """The matrix line a row is drawn on: its test and repeat."""
    return row_line(row)


def repeat_figures(
    verdicts: Iterable[Verdict], columns: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The figures over a run's repeats (None when no row is a repeat, so such a run's data is as before)::

        {count: N, columns: [figures per column], tests: {"testIdx": [figures | null per column]}}

    A test's figures (one test x prompt x provider): ``runs``, ``passes``, ``passRate``,
    ``passRateInterval`` (Wilson 95%), ``flaky``, ``meanScore`` and its interval, and ``text``
    (``14/20 70% [48-85%]``); a column's add how many tests it has and how many are flaky, and its
    interval takes the tests as the unit (their repeats are not independent evidence about the column).
    """
    count = 0
    cells: list[tuple[tuple[int, tuple[int, int]], bool, float]] = []
    for test, column, repeat, passed, score in verdicts:
        count = max(count, repeat + 1)
        cells.append(((test, column), passed, score))
    if count <= 1:
        return None
    stats = repeat_stats_by_key(cells)
    position = {tuple(column["key"]): index for index, column in enumerate(columns)}
    tests: dict[str, list[dict[str, Any] | None]] = {}
    by_column: list[list[RepeatStats]] = [[] for _ in columns]
    for (test, column), figures in sorted(stats.items()):
        tests.setdefault(str(test), [None] * len(columns))[position[column]] = _test_figures(figures)
        by_column[position[column]].append(figures)
    return {"count": count, "columns": [_column_figures(figures) for figures in by_column], "tests": tests}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _test_figures(figures: RepeatStats) -> dict[str, Any]:
    low, high = figures.mean_score_interval
    return {
        "runs": figures.runs,
        "passes": figures.passes,
        "passRate": figures.pass_rate,
        "passRateInterval": list(figures.pass_rate_interval),
        "flaky": figures.flaky,
        "meanScore": _finite(figures.mean_score),
        "meanScoreInterval": [_finite(low), _finite(high)],
        "text": rate_text(figures.passes, figures.runs, figures.pass_rate_interval),
    }


def _column_figures(tests: Sequence[RepeatStats]) -> dict[str, Any] | None:
    runs = sum(figures.runs for figures in tests)
    if not runs:
        return None
    passes = sum(figures.passes for figures in tests)
    interval = suite_pass_rate_interval([(figures.passes, figures.runs) for figures in tests])
    return {
        "runs": runs,
        "passes": passes,
        "passRate": passes / runs,
        "passRateInterval": list(interval),
        "tests": len(tests),
        "flaky": sum(1 for figures in tests if figures.flaky),
        "text": rate_text(passes, runs, interval),
    }
