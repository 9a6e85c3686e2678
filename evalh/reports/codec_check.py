"""The row codec's door: a JSON report read from disk (evalh's or promptfoo's ``-o results.json``) is
read, bounded and checked here, once, before :mod:`evalh.reports.codec_read` or anything else reads it.

Every command that takes a report file reads it through :func:`read_report_file`: ``evalh diff``,
``runs import``, ``merge``, ``view``, and ``run``'s ``--baseline``, ``--retry-errors`` and
``--filter-failing``. A report is untrusted input (a CI artifact, a file from elsewhere), so:

- only a regular file of at most :data:`MAX_REPORT_BYTES` is read (never a device or a FIFO);
- the JSON may nest at most :data:`MAX_REPORT_DEPTH` levels, and whole numbers have at most 4,000 digits;
- every field evalh reads has the type evalh reads it as (:data:`REPORT_SHAPE`: ``results.results`` a
  list of row objects, ``score`` a finite number, ``testIdx`` a whole number, ``vars`` an object...).
  A field may be absent or null (promptfoo's and older evalh's reports leave some out), and fields evalh
  does not read may hold anything.
- a row's ``trace`` (evalh's, beside promptfoo's keys) holds at most :data:`MAX_TRACE_SPANS` spans, each
  with the types evalh writes (ids and names strings, times finite numbers, ``attributes`` an object).
- a row's ``rating`` (evalh's: a person's verdict, codec's ``rated_row``) has ``pass`` true or false, a
  ``score`` from 0 to 1, a comment of at most ``MAX_COMMENT_CHARS`` characters, and ``graded`` (the row as
  graded, which ``runs import`` stores) with the types of the row's own fields.

A report that fails is a ConfigError (exit 2) naming the file and the JSON path of the bad field, so the
code after this never meets a string where it reads an object. The check is looser than
``schemas/report.schema.json`` (which describes what evalh writes: every key required, no other key), as
promptfoo's reports differ from it; ``tests/reports/test_codec_check.py`` holds that every field checked
here is one the schema documents, with a type it allows. :func:`check_report` and
:func:`check_row` check a document or a row already parsed (a stored run, a streamed row).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.config.locate import read_text_file
from evalh.config.safeload import MAX_DEPTH, parse_json
from evalh.errors import ConfigError, ConfigFileError
from evalh.reports.codec import MAX_COMMENT_CHARS, MAX_REVIEWER_CHARS

__all__ = [
    "MAX_REPORT_BYTES",
    "MAX_REPORT_DEPTH",
    "MAX_TRACE_SPANS",
    "REPORT_SHAPE",
    "Shape",
    "check_report",
    "check_row",
    "read_report_file",
]

MAX_REPORT_BYTES = 1024 * 1024 * 1024
# A report holds data nested up to MAX_DEPTH (its config, vars) a few levels down, and outputs that the
# run did not bound; twice MAX_DEPTH leaves them room and stays far below what Python's recursion limit
# allows later walks (json.dumps, redaction, the viewer's data).
MAX_REPORT_DEPTH = 2 * MAX_DEPTH
# The spans one row's trace may hold when read back: more than a run keeps of a trace (the receiver's own
# bound), few enough that a row's spans are read, converted for the viewer and ordered in well under a second.
MAX_TRACE_SPANS = 10_000
_MAX_INDEX = 2**53  # an index or a count: exact as a float too, as promptfoo (JavaScript) writes it
_MAX_TIME_MS = (2**64 - 1) / 1e6  # a span's time: OTLP's fixed64 nanoseconds, written in milliseconds
_HINT = (
    "Pass a JSON report as evalh run -o FILE.json or promptfoo eval -o FILE.json wrote it; "
    "if it was edited, fix that field"
)


@dataclass
class Shape:
    """What a field holds: ``kind`` (``object``, ``list``, ``text``, ``number``, ``fraction``, ``index``,
    ``bool``), or null unless ``required``; an object's known ``fields``, a list's ``items`` (at most
    ``most`` of them; a text's characters), an object's ``values`` (every value, for a map of names)."""

    kind: str
    fields: dict[str, Shape] = field(default_factory=dict)
    items: Shape | None = None
    values: Shape | None = None
    required: bool = False
    most: int | None = None

    @property
    def leaf(self) -> bool:
        return not (self.fields or self.items or self.values or self.most)

    def too_long(self, value: Any) -> bool:
        return self.most is not None and isinstance(value, list | str) and len(value) > self.most


def _obj(
    fields: dict[str, Shape] | None = None, *, values: Shape | None = None, required: bool = False
) -> Shape:
    return Shape("object", fields or {}, values=values, required=required)


def _list(items: Shape | None = None, *, required: bool = False, most: int | None = None) -> Shape:
    return Shape("list", items=items, required=required, most=most)


_TEXT, _NUMBER, _INDEX, _BOOL = Shape("text"), Shape("number"), Shape("index"), Shape("bool")
_TIME = Shape("time")
_SCORES = _obj(values=_NUMBER)
_TOKENS = _obj({name: _INDEX for name in ("total", "prompt", "completion", "cached", "numRequests")})
_ASSERTION = _obj({"type": _TEXT, "threshold": _NUMBER, "weight": _NUMBER, "metric": _TEXT})
_ASSERTION.fields["assert"] = _list(_ASSERTION)  # an assert-set's children, as the config wrote them
_COMPONENT = _obj(
    {
        "pass": _BOOL,
        "score": _NUMBER,
        "error": _BOOL,
        "metadata": _obj({"threshold": _NUMBER, "steps": _list()}),
        "tokensUsed": _TOKENS,
        "assertion": _ASSERTION,
    }
)
_COMPONENT.fields["componentResults"] = _list(_COMPONENT)  # an assert-set's children
_SPAN = _obj(
    {
        **{name: _TEXT for name in ("traceId", "spanId", "parentSpanId", "name", "kind", "service")},
        **{name: _TIME for name in ("startTime", "endTime")},
        "durationMs": _NUMBER,
        "attributes": _obj(),
        "status": _obj({"code": _TEXT, "message": _TEXT}),
    }
)
_TRACE = _obj({"traceId": _TEXT, "spans": _list(_SPAN, most=MAX_TRACE_SPANS), "dropped": _INDEX})
_GRADED = {
    "success": _BOOL,
    "failureReason": _INDEX,
    "score": _NUMBER,
    "gradingResult": _obj({"namedScoreWeights": _SCORES, "componentResults": _list(_COMPONENT)}),
}
_RATING = _obj(
    {
        "pass": Shape("bool", required=True),
        "score": Shape("fraction"),
        "comment": Shape("text", most=MAX_COMMENT_CHARS),
        "reviewer": Shape("text", most=MAX_REVIEWER_CHARS),
        "ratedAt": _TEXT,
        "graded": _obj(_GRADED, required=True),
    }
)
_ROW = _obj(
    {
        **_GRADED,
        "latencyMs": _NUMBER,
        "cost": _NUMBER,
        "vars": _obj(),
        "namedScores": _SCORES,
        **{name: _INDEX for name in ("testIdx", "promptIdx", "providerIdx", "repeatIdx")},
        "prompt": _obj({"raw": _TEXT}),
        "provider": _obj(),
        "response": _obj({"tokenUsage": _TOKENS}),
        "tokenUsage": _obj({"assertions": _TOKENS}),
        "trace": _TRACE,
        "rating": _RATING,
        "testCase": _obj(
            {
                "vars": _obj(),
                "assert": _list(_ASSERTION),
                "threshold": _NUMBER,
                "options": _obj(),
                "metadata": _obj(),
            }
        ),
    },
    required=True,
)
_USAGE = _obj(
    {
        "tokens": _obj({name: _INDEX for name in ("total", "prompt", "completion")}),
        **{name: _INDEX for name in ("requests", "cacheHits", "texts")},
        "cost": _NUMBER,
        "latencyMs": _NUMBER,
    }
)
REPORT_SHAPE = _obj(
    {
        "evalId": _TEXT,
        "config": _obj({"derivedMetrics": _list()}),
        "results": _obj(
            {
                "results": _list(_ROW, required=True),
                "prompts": _list(_obj({"promptIdx": _INDEX, "providerIdx": _INDEX})),
                "stats": _obj(
                    {name: _INDEX for name in ("successes", "failures", "errors")} | {"durationMs": _NUMBER}
                ),
                "evalh": _obj({"notRun": _INDEX, "passRate": _NUMBER, "providerUsage": _list(_USAGE)}),
                "aggregates": _obj(),
            },
            required=True,
        ),
    },
    required=True,
)

_KIND_WORDS = {
    "object": "an object",
    "list": "a list",
    "text": "a string",
    "number": "a finite number",
    "fraction": "a number from 0 to 1",
    "index": f"a whole number from 0 to {_MAX_INDEX:,}",
    "time": f"Unix milliseconds from 0 to {_MAX_TIME_MS:,.0f}",
    "bool": "true or false",
}


_PYTHON_TYPES: dict[str, type] = {"object": dict, "list": list, "text": str, "bool": bool}


def _fits(value: Any, kind: str) -> bool:
    wanted = _PYTHON_TYPES.get(kind)
    if wanted is not None:
        return isinstance(value, wanted)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind == "index":
        return isinstance(value, int) and 0 <= value <= _MAX_INDEX
    if kind == "time":  # a finite number may still overflow as nanoseconds (1e308 ms)
        return 0 <= value <= _MAX_TIME_MS
    if kind == "fraction":
        return 0 <= value <= 1
    return math.isfinite(value)


def _valid(value: Any, shape: Shape) -> bool:
    """Whether ``value`` has ``shape``: the fast walk, without paths (:func:`_problem` names the field
    when it fails). It visits the fields of the shape only, so a row's unread fields cost nothing."""
    if value is None:
        return not shape.required
    if not _fits(value, shape.kind) or shape.too_long(value):
        return False
    if isinstance(value, dict):
        for key, sub in shape.fields.items():
            item = value.get(key)
            if item is None:
                if sub.required:
                    return False
            elif not (_fits(item, sub.kind) if sub.leaf else _valid(item, sub)):
                return False
        every = shape.values
        return every is None or all(_valid(item, every) for item in value.values())
    items = shape.items
    return items is None or not isinstance(value, list) or all(_valid(item, items) for item in value)


def _described(value: Any) -> str:
    if value is None:
        return "null"
    for kind, word in (
        ("bool", "a boolean"),
        ("object", "an object"),
        ("list", "a list"),
        ("text", "a string"),
    ):
        if _fits(value, kind):
            return f"{word} ({_shown(value)})" if kind in ("bool", "text") else word
    return f"the number {_shown(value)}"


def _shown(value: Any) -> str:
    text = repr(value)  # repr: control characters escaped, never sent raw to a terminal
    return text if len(text) <= 60 else text[:57] + "..."


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    plain = key.isidentifier()
    return f"{parent}.{key}" if plain and parent else key if plain else f"{parent}[{key!r}]"


_ABSENT = object()  # a required key the object lacks


def _problem(path: str, shape: Shape, value: Any) -> str | None:
    """The first field under ``value`` that does not have its shape, as ``path: must be ...``."""
    stack: list[tuple[str, Shape, Any]] = [(path, shape, value)]
    while stack:  # without recursion: a shape recurses (an assert-set's components)
        where, expected, item = stack.pop()
        if item is _ABSENT:
            return f"{where} is missing"
        if item is None and not expected.required:
            continue
        if not _fits(item, expected.kind):
            wanted = _KIND_WORDS[expected.kind]
            if not expected.required:
                wanted += " or null"
            return f"{where or 'the document'} must be {wanted}, not {_described(item)}"
        if expected.too_long(item):
            unit = "characters" if isinstance(item, str) else "items"
            return f"{where} must hold at most {expected.most:,} {unit}, not {len(item):,}"
        if isinstance(item, dict):
            children = [(key, expected.fields.get(key, expected.values)) for key in item]
            stack.extend((_path(where, key), sub, item[key]) for key, sub in reversed(children) if sub)
            stack.extend(
                (_path(where, key), sub, _ABSENT)
                for key, sub in expected.fields.items()
                if sub.required and key not in item
            )
        elif isinstance(item, list) and expected.items is not None:
            stack.extend(
                (_path(where, index), expected.items, child)
                for index, child in reversed(list(enumerate(item)))
            )
    return None


def check_report(data: Any, file: str) -> dict[str, Any]:
    """``data`` (a parsed JSON report) when every field evalh reads has its shape; ConfigError (exit 2)
    naming ``file`` and the JSON path of the first field that does not."""
    problem = None if _valid(data, REPORT_SHAPE) else _problem("", REPORT_SHAPE, data)
    if problem is not None:
        raise ConfigError(f"is not an evalh or promptfoo JSON report: {problem}", where=file, hint=_HINT)
    document: dict[str, Any] = data
    return document


def check_row(row: Any, file: str, index: int) -> Mapping[str, Any]:
    """One row of ``results.results`` (the ``index``-th) checked as :func:`check_report` checks it."""
    problem = None if _valid(row, _ROW) else _problem(f"results.results[{index}]", _ROW, row)
    if problem is not None:
        raise ConfigError(f"is not an evalh or promptfoo JSON report: {problem}", where=file, hint=_HINT)
    checked: Mapping[str, Any] = row
    return checked


def read_report_file(report: Path, *, where: str | None = None) -> dict[str, Any]:
    """The JSON report in ``report``, read within the bounds and checked (see the module docstring).
    ConfigFileError when it is missing or not a regular file, ConfigError when it is not a report; both
    name the file (after ``where``, the flag or argument that named it, when given)."""
    shown = f"{where}: {report}" if where and where != str(report) else str(report)
    try:
        text = read_text_file(
            report,
            where,
            limit=MAX_REPORT_BYTES,
            too_large="evalh reads JSON reports of at most this size; keep fewer rows per report "
            "(evalh run --shard i/N writes one report per share)",
        )
    except FileNotFoundError:
        raise ConfigFileError(f"report not found: {report}", where=where) from None
    depth_hint = (
        f"evalh reads JSON reports nested at most {MAX_REPORT_DEPTH} levels deep (evalh and promptfoo write "
        "far less); pass a report as evalh run -o FILE.json wrote it"
    )
    data = parse_json(text, shown, max_depth=MAX_REPORT_DEPTH, depth_hint=depth_hint)
    return check_report(data, shown)
