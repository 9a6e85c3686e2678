"""The promptfoo row shape, written: a :class:`~evalh.model.TestResult` as one ``results.results[]`` row
(promptfoo's ``EvaluateResult``) and a column as one ``results.prompts[]`` entry.

This module and :mod:`evalh.reports.codec_read` (the rows read back) are the only ones that spell the
row keys (``success``, ``failureReason``, ``gradingResult``, ``testIdx`` ...) and the ``failureReason``
codes; ``tests/reports/test_codec_home.py`` holds that. A new row field or status is added here, once,
and every reader (retry, merge, diff, the run store, the viewer, the filters) asks
:mod:`~evalh.reports.codec_read`. Differences from promptfoo: ``promptIdx`` is the prompt's index in the
config's ``prompts`` (``providerIdx`` gives the provider's), and keys holding secrets are redacted.
evalh's addition beside promptfoo's keys: ``trace`` (the row's OpenTelemetry spans, :func:`trace_to_json`),
only on the rows of a run that traces, so every other row is written exactly as before; and ``rating``
(a person's verdict, :func:`rated_row`), only on the rows someone rated.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from evalh.model import (
    RETURNED_COMPONENTS,
    AssertionSpec,
    Column,
    GradedAssertion,
    Prompt,
    RowRating,
    Status,
    TestCase,
    TestResult,
    Usage,
)
from evalh.reports.codec_trace import trace_to_json
from evalh.reports.textutil import output_text
from evalh.secrets import redact_config as redact
from evalh.secrets import redaction_state

__all__ = [
    "FAILURE_REASON",
    "HUMAN_ASSERTION",
    "MANUAL_REASON",
    "MAX_COMMENT_CHARS",
    "MAX_REVIEWER_CHARS",
    "MEMO_LIMIT",
    "Memo",
    "column_to_json",
    "flatten_components",
    "graded_row",
    "new_memo",
    "rated_row",
    "rating_to_json",
    "result_to_json",
    "trace_to_json",
    "usage_to_json",
]


# Tests (and prompts) whose conversion a streaming memo keeps: the rows of a test (its prompts x
# providers x repeats) finish close together, within the run's in-flight window (1,024 rows at least).
MEMO_LIMIT = 1024

_FIGURES = ("threshold", "weight", "metric")  # left out of a component's assertion when null
# promptfoo's ResultFailureReason: NONE, ASSERT, ERROR (codec_read decodes it)
FAILURE_REASON = {Status.PASS: 0, Status.FAIL: 1, Status.ERROR: 2}
# promptfoo's manual rating: a component of this assertion type decides the row, with this reason
HUMAN_ASSERTION = "human"
MANUAL_REASON = "Manual result (overrides all other grading results)"
MAX_COMMENT_CHARS = 4000  # a rating's comment (and a reviewer's name, below): bounded data
MAX_REVIEWER_CHARS = 200
# what a rating changes, and ``error`` (kept as graded, as promptfoo keeps it): a row written again from
# its result (``runs show -o``) has them as graded
_RATED_FIELDS = ("success", "score", "failureReason", "error", "gradingResult")


def usage_to_json(usage: Usage | None) -> dict[str, Any]:
    """promptfoo's ``TokenUsage``: ``{total, prompt, completion, cached, numRequests}``."""
    u = usage or Usage()
    return {
        "total": u.total_tokens,
        "prompt": u.prompt_tokens,
        "completion": u.completion_tokens,
        "cached": u.cached,
        "numRequests": u.requests,
    }


class Memo:
    """Converted tests and prompts, reused by every row sharing them (the report is read-only data).

    Keyed by ``id()``; the object is kept alongside so an id is never reused while cached. With a
    ``limit``, the least recently used conversions are dropped beyond it: a run's rows are converted
    as they finish, and keeping every test's conversion would hold a second copy of the suite. An
    OrderedDict, not a dict: dropping the oldest of a dict whose front was deleted again and again
    scans every deleted slot (a third of the conversion time at 5,000 tests).
    """

    def __init__(self, limit: int | None = None) -> None:
        self._items: OrderedDict[int, tuple[object, Any]] = OrderedDict()
        self._limit = limit
        # the test converted last: the next one reuses its conversions of what they share (see _test_json)
        self.last_test: _TestJson | None = None

    def get(self, obj: object, build: Callable[..., Any], *args: Any) -> Any:
        """The conversion of ``obj``: ``build(*args)`` the first time, the kept result after."""
        key = id(obj)
        hit = self._items.get(key)
        if hit is not None and hit[0] is obj:
            if self._limit is not None:
                self._items.move_to_end(key)
            return hit[1]
        value = build(*args)
        self._items[key] = (obj, value)
        if self._limit is not None:
            self._items.move_to_end(key)
            if len(self._items) > self._limit:
                self._items.popitem(last=False)
        return value


# A spec's report forms: the spec, as its components show it, and as the test wrote it (a plain tuple:
# one per assertion of every test, and a NamedTuple's constructor is a Python call)
_SpecJson = tuple[AssertionSpec, dict[str, Any], Any]


class _TestJson(NamedTuple):
    """A test's share of each of its rows (its prompts x providers x repeats), converted and redacted
    once: ``vars`` and ``metadata`` (each row's and its ``testCase``'s), ``testCase``, and the report
    form of each of its assertions, assert-set members included (by ``id``: the spec, its component
    form, and its form as written, the ``testCase.assert`` item). ``options``: the test's own, which
    ``testCase.options`` redacts; ``state``: :func:`~evalh.secrets.redaction_state` when it was made."""

    vars: dict[str, Any]
    metadata: dict[str, Any]
    case: dict[str, Any]
    assertions: dict[int, _SpecJson]
    options: Mapping[str, Any] | None = None
    state: object = None

    def assertion(self, spec: AssertionSpec) -> dict[str, Any]:
        """``spec`` as a component's ``assertion`` (converted now if it is not one of the test's)."""
        hit = self.assertions.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        return _assertion_to_json(spec, redact(spec.raw) if spec.raw else None)


def _assertion_to_json(spec: AssertionSpec, written: Mapping[str, Any] | None) -> dict[str, Any]:
    """A component's ``assertion``: ``written`` (the spec as the config wrote it, redacted) with the
    type in full and the figures that apply."""
    out: dict[str, Any] = {**written} if written else {}
    out["type"] = spec.type  # the type as written (full_type's value)
    if None in out.values():  # rare: a figure written as null
        for key in _FIGURES:
            if out.get(key, 0) is None:
                del out[key]
    value = spec.value
    if type(value) is str or not isinstance(value, Mapping):
        if value is not None:
            out["value"] = value
    elif not written or spec.raw.get("value") is not value:  # else written holds it redacted already
        out["value"] = redact(value)
    if spec.threshold is not None:
        out["threshold"] = spec.threshold
    if spec.weight != 1.0 or "weight" in out:
        out["weight"] = spec.weight
    if spec.metric:
        out["metric"] = spec.metric
    return out


def _component_to_json(graded: GradedAssertion, test: _TestJson) -> dict[str, Any]:
    spec, details = graded.spec, graded.details
    hit = test.assertions.get(id(spec))  # the test's own spec (the usual case) without a call
    out: dict[str, Any] = {
        "pass": graded.passed,
        "score": graded.score,
        "reason": graded.reason,
        "assertion": hit[1] if hit is not None and hit[0] is spec else test.assertion(spec),
        "metadata": dict(details) if details else {},
    }
    if graded.error:
        out["error"] = True
    if graded.skipped:
        out["skipped"] = True
    if graded.usage is not None:
        out["tokensUsed"] = usage_to_json(graded.usage)
    if graded.children:
        out["componentResults"] = _flatten(graded.children, test)
    elif (
        details
        and RETURNED_COMPONENTS in details
        and isinstance(returned := out["metadata"].pop(RETURNED_COMPONENTS), list)
    ):
        # a javascript/python assertion's own componentResults: listed after it, as an assert-set's
        parent = out["assertion"]
        out["componentResults"] = [{**sub, "assertion": sub.get("assertion") or parent} for sub in returned]
    return out


def flatten_components(graded: Iterable[GradedAssertion]) -> list[dict[str, Any]]:
    """Component results as promptfoo lists them: each assert-set, then its children flattened after it."""
    return _flatten(graded, _TestJson({}, {}, {}, {}))


def _flatten(graded: Iterable[GradedAssertion], test: _TestJson) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in graded:
        component = _component_to_json(item, test)
        out.append(component)
        nested = component.get("componentResults")
        if nested is not None:
            out.extend(nested)
    return out


def _prompt_id(prompt: Prompt) -> str:
    if prompt.id:
        return prompt.id
    return hashlib.sha256(f"{prompt.label}:{output_text(prompt.raw)}".encode(errors="replace")).hexdigest()


def _test_json(test: TestCase, memo: Memo | None = None) -> _TestJson:
    """``test``'s share of its rows; with ``memo``, what it shares with the test converted before it
    (defaultTest's assertions, which the load shares between tests, and its options' values) is taken
    from that one's conversion while no secret value was registered since (each redaction is the same)."""
    variables, metadata = dict(test.vars), dict(test.metadata)
    state = last = None
    if memo is not None:  # a conversion to share: the registry's state it was made in decides
        state, last = redaction_state(), memo.last_test
        if last is not None and last.state is not state:
            last = None
    # defaultTest's shared specs come first: a test whose first spec is not the last test's shares none
    reused = (
        last.assertions
        if last is not None and test.asserts and id(test.asserts[0]) in last.assertions
        else {}
    )
    assertions: dict[int, _SpecJson] = {}
    if reused:
        written = [_reused_spec(spec, assertions, reused) for spec in test.asserts]
    else:
        written = [_convert_spec(spec, assertions) for spec in test.asserts]
    case: dict[str, Any] = {"vars": variables}
    if test.description is not None:
        case["description"] = test.description
    case["assert"] = written
    case["options"] = _options_json(test.options, last) if test.options else {}
    case["metadata"] = metadata
    if test.threshold is not None:
        case["threshold"] = test.threshold
    if test.has_output:
        case["output"] = test.output
    converted = _TestJson(variables, metadata, case, assertions, test.options, state)
    if memo is not None:
        memo.last_test = converted
    return converted


def _options_json(options: Mapping[str, Any], last: _TestJson | None) -> Any:
    """``testCase.options``: the last test's when its options held the same values under the same keys
    (defaultTest's merged into each test: the same objects), else redacted now."""
    if last is not None and last.options is not None and _same_items(options, last.options):
        return last.case["options"]
    return redact(options)


def _same_items(one: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether two mappings hold the very same values under equal keys, in the same order."""
    if one is other:
        return True
    if len(one) != len(other):
        return False
    return all(a == b and x is y for (a, x), (b, y) in zip(one.items(), other.items(), strict=True))


def _convert_spec(spec: AssertionSpec, into: dict[int, _SpecJson]) -> Any:
    """Redacted once: the spec as written (testCase's ``assert``, returned) and as its components show
    it (put ``into`` by the spec's ``id``, its children's too)."""
    raw = spec.raw
    if raw:
        written = redact(raw)
        shown = _assertion_to_json(spec, written)
    else:
        written = shown = _assertion_to_json(spec, None)
    into[id(spec)] = (spec, shown, written)
    if spec.children:
        for child in spec.children:
            _convert_spec(child, into)
    return written


def _reused_spec(spec: AssertionSpec, into: dict[int, _SpecJson], reused: Mapping[int, _SpecJson]) -> Any:
    """:func:`_convert_spec`, or the conversion ``reused`` holds of the same spec (the last test's), its
    children's taken with it."""
    hit = reused.get(id(spec))
    if hit is None or hit[0] is not spec:
        return _convert_spec(spec, into)
    into[id(spec)] = hit
    for child in spec.children:
        _reused_spec(child, into, reused)
    return hit[2]


def _error_text(row: TestResult) -> str | None:
    if row.status is Status.PASS:
        return None
    if row.status is Status.FAIL:
        return row.reason
    return row.error or row.reason or "Evaluation error"


def _grading_result(row: TestResult, test: _TestJson, usage: dict[str, Any]) -> dict[str, Any] | None:
    """``usage``: :func:`usage_to_json` of the row's grading usage (the row's ``tokenUsage.assertions``)."""
    if row.status is Status.ERROR and not row.assertions:
        return None
    return {
        "pass": row.status is Status.PASS,
        "score": row.score,
        "reason": row.reason,
        "namedScores": dict(row.named_scores),
        "namedScoreWeights": dict(row.named_score_weights),
        "tokensUsed": usage,
        "componentResults": _flatten(row.assertions, test),
        "assertion": None,
    }


def result_to_json(row: TestResult, *, memo: Memo | None = None) -> dict[str, Any]:
    """One row as promptfoo's ``EvaluateResult`` (one JSONL line, one ``results.results[]`` item).

    ``memo`` (from :func:`new_memo`) shares the conversion of tests and prompts between rows; the dicts
    returned may then share sub-objects, so treat them as read-only.
    """
    memo = memo or Memo()
    test: _TestJson = memo.get(row.test, _test_json, row.test, memo)
    latency = row.latency_ms if row.latency_ms is not None else 0.0
    cost = row.cost if row.cost is not None else 0.0
    usage, grading_usage = usage_to_json(row.usage), usage_to_json(row.grading_usage)  # each made once
    out: dict[str, Any] = {
        "id": row.id or str(uuid.uuid4()),
        "testIdx": row.test.index,
        "promptIdx": row.prompt_index,
        "providerIdx": row.provider_index,
        "repeatIdx": row.repeat_index,
        "promptId": memo.get(row.prompt, _prompt_id, row.prompt),  # a sha256 per prompt, not per row
        "description": row.test.description,
        "provider": {"id": row.provider.shown_id, "label": row.provider.display},
        "prompt": {"raw": output_text(row.rendered_prompt), "label": row.prompt.label},
        "vars": test.vars,
        "testCase": test.case,
        "response": {
            "output": row.output,
            "tokenUsage": usage,
            "cached": row.cached,
            "cost": cost,
            "latencyMs": latency,
            "error": row.error if row.status is Status.ERROR and not row.assertions else None,
        },
        "success": row.status is Status.PASS,
        "score": row.score,
        "failureReason": FAILURE_REASON[row.status],
        "error": _error_text(row),
        "latencyMs": latency,
        "cost": cost,
        "namedScores": dict(row.named_scores),
        "tokenUsage": {**usage, "assertions": grading_usage},
        "metadata": test.metadata,
        "gradingResult": _grading_result(row, test, grading_usage),
    }
    if row.trace is not None:
        out["trace"] = trace_to_json(row.trace)
    return out if row.rating is None else _rated_result(out, row.rating)


def rating_to_json(rating: RowRating) -> dict[str, Any]:
    """A row's ``rating`` without ``graded``: ``{pass, score, comment, reviewer, ratedAt}``."""
    return {
        "pass": rating.passed,
        "score": rating.score,
        "comment": rating.comment,
        "reviewer": rating.reviewer,
        "ratedAt": rating.rated_at,
    }


def _rated_result(out: dict[str, Any], rating: RowRating) -> dict[str, Any]:
    """A rated result's row: its graded fields as the rating kept them, then the rating applied, so the
    row reads as the stored one (the human component, the comment, ``rating``)."""
    graded, _ = graded_row({**out, "rating": {"graded": dict(rating.graded)}})
    return dict(rated_row(graded, rating_to_json(rating)))


def column_to_json(column: Column) -> dict[str, Any]:
    """One ``results.prompts[]`` entry (promptfoo's ``CompletedPrompt``): a prompt x provider column."""
    totals = column.named_totals
    return {
        "id": _prompt_id(column.prompt),
        "raw": output_text(column.prompt.raw),
        "label": column.prompt.label,
        "provider": column.provider.display,
        "promptIdx": column.prompt_index,
        "providerIdx": column.provider_index,
        "metrics": {
            "score": column.score_total,
            "testPassCount": column.figures.passed,
            "testFailCount": column.figures.failed,
            "testErrorCount": column.figures.errors,
            "assertPassCount": column.assertions_passed,
            "assertFailCount": column.assertions_failed,
            "totalLatencyMs": column.latency_ms,
            "tokenUsage": usage_to_json(column.usage),
            # promptfoo writes derivedMetrics among the named scores of each prompt
            "namedScores": {
                **{name: t.total for name, t in totals.items()},
                **{name: value for name, value in column.derived.items() if value is not None},
            },
            "namedScoresCount": {name: t.count for name, t in totals.items()},
            "namedScoreWeights": {name: t.weight for name, t in totals.items()},
            "cost": column.cost,
        },
    }


def new_memo() -> Memo:
    """A conversion cache for :func:`result_to_json` over rows converted one by one as a run goes (see
    ``reports/streamed.py``): it keeps the :data:`MEMO_LIMIT` most recently used conversions."""
    return Memo(MEMO_LIMIT)


def rated_row(row: Mapping[str, Any], rating: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``row`` as promptfoo records a manual rating (``rating``: ``{pass, score, comment, reviewer,
    ratedAt}``, as ``Rating.to_json`` gives it; None: ``row`` itself): ``success``, ``score`` and
    ``failureReason`` follow it, ``gradingResult`` takes its verdict, the manual reason and the comment, and
    its ``componentResults`` end with (or replace) the ``human`` one. Beside promptfoo's keys, ``rating``
    holds it with ``graded``: the row's values of the fields it changed, for :func:`graded_row`."""
    if rating is None:
        return row
    row, _ = graded_row(row)  # a row rated again is rated from its graded values
    passed, score = bool(rating["pass"]), float(rating["score"])
    comment = str(rating.get("comment") or "")
    grading = row.get("gradingResult")
    grading = grading if isinstance(grading, Mapping) else _UNGRADED
    human = {
        "pass": passed,
        "score": score,
        "reason": MANUAL_REASON,
        "comment": comment,
        "assertion": {"type": HUMAN_ASSERTION},
        "metadata": {},  # as every component evalh writes has
    }
    components = list(grading.get("componentResults") or [])
    found = [at for at, component in enumerate(components) if _is_human(component)]
    if found:
        components[found[0]] = human
    else:
        components.append(human)
    verdict = {"pass": passed, "score": score, "reason": MANUAL_REASON, "comment": comment}
    graded = {key: row[key] for key in _RATED_FIELDS if key in row}
    kept = {key: rating[key] for key in ("pass", "score", "comment", "reviewer", "ratedAt") if key in rating}
    return {
        **row,
        "success": passed,
        "score": score,
        "failureReason": FAILURE_REASON[Status.PASS if passed else Status.FAIL],
        "gradingResult": {**grading, **verdict, "componentResults": components},
        "rating": {**kept, "graded": graded},
    }


# the gradingResult a rating gives a row that had none (an ERROR before any assertion ran)
_UNGRADED: Mapping[str, Any] = {
    "namedScores": {},
    "namedScoreWeights": {},
    "tokensUsed": usage_to_json(None),
    "componentResults": [],
    "assertion": None,
}


def _is_human(component: Any) -> bool:
    assertion = component.get("assertion") if isinstance(component, Mapping) else None
    return isinstance(assertion, Mapping) and assertion.get("type") == HUMAN_ASSERTION


def graded_row(row: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict[str, Any] | None]:
    """A row written by :func:`rated_row` as its graded row (every field the rating changed put back)
    and its rating without ``graded``; any other row as ``(row, None)``."""
    rating = row.get("rating")
    if not isinstance(rating, Mapping):
        return row, None
    graded = rating.get("graded")
    graded = graded if isinstance(graded, Mapping) else {}
    restored = {key: value for key, value in row.items() if key != "rating"}
    for key in _RATED_FIELDS:
        if key in graded:
            restored[key] = graded[key]
        else:
            restored.pop(key, None)
    return restored, {key: value for key, value in rating.items() if key != "graded"}
