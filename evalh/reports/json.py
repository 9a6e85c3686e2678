"""A :class:`~evalh.model.RunRecord` as promptfoo's JSON output file (``-o out.json``), plus evalh's extras.

The shape (documented in ``schemas/report.schema.json``)::

    {evalId, results: {version: 3, timestamp, prompts[], results[], stats, evalh, aggregates},
     config, shareableUrl: null, metadata: {evalhVersion, pythonVersion, platform, arch, exportedAt}}

``results.results[]`` rows are promptfoo ``EvaluateResult`` objects (:func:`result_to_json`, also used by
the JSONL stream). Differences from promptfoo: ``promptIdx`` is the prompt's index in the config's
``prompts`` (``providerIdx`` gives the provider's), and keys holding secrets (``apiKey``, ``authorization``,
...) are replaced by ``"[REDACTED]"`` wherever they appear.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import platform
import re
import secrets
import sys
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from evalh.common.version import __version__
from evalh.model import (
    Aggregates,
    AssertionSpec,
    Column,
    GradedAssertion,
    Prompt,
    RowFigures,
    RunRecord,
    ScoreStats,
    ShardInfo,
    Status,
    TestCase,
    TestResult,
    TypeFigures,
    Usage,
)
from evalh.reports.textutil import output_text
from evalh.secrets import redact_config as redact

__all__ = [
    "MEMO_LIMIT",
    "aggregates_to_json",
    "flatten_components",
    "new_eval_id",
    "new_memo",
    "report_document",
    "result_to_json",
    "to_promptfoo_json",
    "usage_to_json",
]

# Tests (and prompts) whose conversion a streaming memo keeps: the rows of a test (its prompts x
# providers x repeats) finish close together, within the run's in-flight window (1,024 rows at least).
MEMO_LIMIT = 1024

_FIGURES = ("threshold", "weight", "metric")  # left out of a component's assertion when null
_FAILURE_REASON = {Status.PASS: 0, Status.FAIL: 1, Status.ERROR: 2}


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


class _Memo:
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


class _TestJson(NamedTuple):
    """A test's share of each of its rows (its prompts x providers x repeats), converted and redacted
    once: ``vars`` and ``metadata`` (each row's and its ``testCase``'s), ``testCase``, and the report
    form of each of its assertions, assert-set members included (by ``id``, the spec kept beside it)."""

    vars: dict[str, Any]
    metadata: dict[str, Any]
    case: dict[str, Any]
    assertions: dict[int, tuple[AssertionSpec, dict[str, Any]]]

    def assertion(self, spec: AssertionSpec) -> dict[str, Any]:
        """``spec`` as a component's ``assertion`` (converted now if it is not one of the test's)."""
        hit = self.assertions.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        return _assertion_to_json(spec, redact(spec.raw) if spec.raw else None)


def _assertion_to_json(spec: AssertionSpec, written: Mapping[str, Any] | None) -> dict[str, Any]:
    """A component's ``assertion``: ``written`` (the spec as the config wrote it, redacted) with the
    type in full and the figures that apply."""
    out: dict[str, Any] = dict(written) if written else {}
    out["type"] = spec.full_type
    for key in _FIGURES:
        if key in out and out[key] is None:
            del out[key]
    value = spec.value
    if value is not None:
        out["value"] = redact(value) if type(value) is not str and isinstance(value, Mapping) else value
    if spec.threshold is not None:
        out["threshold"] = spec.threshold
    if spec.weight != 1.0 or "weight" in out:
        out["weight"] = spec.weight
    if spec.metric:
        out["metric"] = spec.metric
    return out


def _component_to_json(graded: GradedAssertion, test: _TestJson) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pass": graded.passed,
        "score": graded.score,
        "reason": graded.reason,
        "assertion": test.assertion(graded.spec),
        "metadata": dict(graded.details),
    }
    if graded.error:
        out["error"] = True
    if graded.skipped:
        out["skipped"] = True
    if graded.usage is not None:
        out["tokensUsed"] = usage_to_json(graded.usage)
    if graded.children:
        out["componentResults"] = _flatten(graded.children, test)
    return out


def flatten_components(graded: Iterable[GradedAssertion]) -> list[dict[str, Any]]:
    """Component results as promptfoo lists them: each assert-set, then its children flattened after it."""
    return _flatten(graded, _TestJson({}, {}, {}, {}))


def _flatten(graded: Iterable[GradedAssertion], test: _TestJson) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in graded:
        component = _component_to_json(item, test)
        out.append(component)
        out.extend(component.get("componentResults", ()))
    return out


def _prompt_id(prompt: Prompt) -> str:
    if prompt.id:
        return prompt.id
    return hashlib.sha256(f"{prompt.label}:{output_text(prompt.raw)}".encode(errors="replace")).hexdigest()


def _test_json(test: TestCase) -> _TestJson:
    variables, metadata = dict(test.vars), dict(test.metadata)
    assertions: dict[int, tuple[AssertionSpec, dict[str, Any]]] = {}

    def convert(spec: AssertionSpec) -> dict[str, Any]:
        """Redacted once: the spec as written (testCase's ``assert``) and as its components show it."""
        raw = redact(spec.raw) if spec.raw else None
        assertions[id(spec)] = (spec, _assertion_to_json(spec, raw))
        for child in spec.children:
            convert(child)
        return raw if raw is not None else assertions[id(spec)][1]

    written = [convert(spec) for spec in test.asserts]
    case: dict[str, Any] = {"vars": variables}
    if test.description is not None:
        case["description"] = test.description
    case["assert"] = written
    case["options"] = redact(test.options)
    case["metadata"] = metadata
    if test.threshold is not None:
        case["threshold"] = test.threshold
    if test.has_output:
        case["output"] = test.output
    return _TestJson(variables, metadata, case, assertions)


def _error_text(row: TestResult) -> str | None:
    if row.status is Status.PASS:
        return None
    if row.status is Status.FAIL:
        return row.reason
    return row.error or row.reason or "Evaluation error"


def _grading_result(row: TestResult, test: _TestJson) -> dict[str, Any] | None:
    if row.status is Status.ERROR and not row.assertions:
        return None
    return {
        "pass": row.status is Status.PASS,
        "score": row.score,
        "reason": row.reason,
        "namedScores": dict(row.named_scores),
        "namedScoreWeights": dict(row.named_score_weights),
        "tokensUsed": usage_to_json(row.grading_usage),
        "componentResults": _flatten(row.assertions, test),
        "assertion": None,
    }


def result_to_json(row: TestResult, *, memo: _Memo | None = None) -> dict[str, Any]:
    """One row as promptfoo's ``EvaluateResult`` (one JSONL line, one ``results.results[]`` item).

    ``memo`` (from :func:`new_memo`) shares the conversion of tests and prompts between rows; the dicts
    returned may then share sub-objects, so treat them as read-only.
    """
    memo = memo or _Memo()
    test: _TestJson = memo.get(row.test, _test_json, row.test)
    latency = row.latency_ms if row.latency_ms is not None else 0.0
    cost = row.cost if row.cost is not None else 0.0
    token_usage = usage_to_json(row.usage)
    token_usage["assertions"] = usage_to_json(row.grading_usage)
    return {
        "id": row.id or str(uuid.uuid4()),
        "testIdx": row.test.index,
        "promptIdx": row.prompt_index,
        "providerIdx": row.provider_index,
        "repeatIdx": row.repeat_index,
        "promptId": memo.get(row.prompt, _prompt_id, row.prompt),  # a sha256 per prompt, not per row
        "description": row.test.description,
        "provider": {"id": row.provider.id, "label": row.provider.display},
        "prompt": {"raw": output_text(row.rendered_prompt), "label": row.prompt.label},
        "vars": test.vars,
        "testCase": test.case,
        "response": {
            "output": row.output,
            "tokenUsage": usage_to_json(row.usage),
            "cached": row.cached,
            "cost": cost,
            "latencyMs": latency,
            "error": row.error if row.status is Status.ERROR and not row.assertions else None,
        },
        "success": row.status is Status.PASS,
        "score": row.score,
        "failureReason": _FAILURE_REASON[row.status],
        "error": _error_text(row),
        "latencyMs": latency,
        "cost": cost,
        "namedScores": dict(row.named_scores),
        "tokenUsage": token_usage,
        "metadata": test.metadata,
        "gradingResult": _grading_result(row, test),
    }


def _column_to_json(column: Column) -> dict[str, Any]:
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


def _camel(figures: RowFigures | ScoreStats | TypeFigures) -> dict[str, Any]:
    """A flat figures record with the report's camelCase keys (``pass_rate`` -> ``passRate``)."""
    return {
        re.sub(r"_([a-z])", lambda m: m.group(1).upper(), field.name): getattr(figures, field.name)
        for field in dataclasses.fields(figures)
    }


def aggregates_to_json(aggregates: Aggregates) -> dict[str, Any]:
    """The run's aggregates in the report's shape (see ``evalh.runner.aggregates``)."""
    columns: list[dict[str, Any]] = []
    classification: list[dict[str, Any]] = []
    derived: list[dict[str, Any]] = []
    for column in (c for c in aggregates.columns if c.rows):  # a run without rows lists none
        identity = {
            "provider": column.provider.display,
            "prompt": column.prompt.label,
            "providerIndex": column.provider_index,
            "promptIndex": column.prompt_index,
        }
        named = {name: stats.mean for name, stats in column.named_scores.items()}
        record = {**identity, **_camel(column.figures), "namedScores": named}
        report = column.classification
        if report is not None:
            record.update(macroF1=report["macroF1"], accuracy=report["accuracy"])
            classification.append({**identity, **report})
        columns.append(record)
        if column.derived:
            derived.append({**identity, **column.derived})
    overall = _camel(aggregates.figures)
    return {
        "passRate": overall["passRate"],
        "meanScore": overall["meanScore"],
        "counts": {key: overall[key] for key in ("rows", "passed", "failed", "errors")},
        "namedScores": {name: _camel(s) for name, s in aggregates.named_scores.items()},
        "assertionTypes": {name: _camel(t) for name, t in aggregates.assertion_types.items()},
        "columns": columns,
        "classification": classification,
        **({"derivedMetrics": derived} if derived else {}),  # only for a config with derivedMetrics
    }


def _stats(run: RunRecord) -> dict[str, Any]:
    usage = Usage()
    grading = Usage()
    for row in run.results:
        usage = usage + row.usage
        grading = grading + row.grading_usage
    token_usage = usage_to_json(usage)
    token_usage["assertions"] = usage_to_json(grading)
    return {
        "successes": run.count(Status.PASS),
        "failures": run.count(Status.FAIL),
        "errors": run.count(Status.ERROR),
        "tokenUsage": token_usage,
        "durationMs": run.duration_ms,
    }


def _evalh_block(run: RunRecord) -> dict[str, Any]:
    return {
        "providerUsage": [
            {
                "provider": item.provider,
                "requests": item.usage.requests,
                "texts": item.usage.texts,
                "tokens": {
                    "total": item.usage.total_tokens,
                    "prompt": item.usage.prompt_tokens,
                    "completion": item.usage.completion_tokens,
                },
                "cacheHits": item.usage.cached,
                "latencyMs": item.usage.latency_ms,
                "cost": item.usage.cost,
            }
            for item in run.provider_usage
        ],
        "interrupted": run.interrupted,
        "interruptedBy": run.interrupted_by,
        "notRun": run.not_run,
        "passRate": run.pass_rate,
        "cache": run.cache_share.to_json(),
        **({"shard": _shard_to_json(run.suite.shard)} if run.suite.shard is not None else {}),
    }


def _shard_to_json(shard: ShardInfo) -> dict[str, Any]:
    """Which share of a run the report holds (``--shard``), for ``evalh merge``."""
    return {
        "index": shard.index,
        "total": shard.total,
        "fingerprint": shard.fingerprint,
        "tests": shard.tests,
        "runTests": shard.run_tests,
    }


def new_eval_id(started_at: str) -> str:
    """A run id in promptfoo's form, ``eval-XYZ-2025-01-02T03:04:05``."""
    stamp = started_at[:19]  # 2025-01-02T03:04:05, without fraction or zone, like promptfoo
    return f"eval-{secrets.token_urlsafe(3)[:3]}-{stamp}"


def new_memo() -> _Memo:
    """A conversion cache for :func:`result_to_json` over rows converted one by one as a run goes (see
    ``reports/streamed.py``): it keeps the :data:`MEMO_LIMIT` most recently used conversions."""
    return _Memo(MEMO_LIMIT)


def to_promptfoo_json(run: RunRecord, *, eval_id: str | None = None) -> dict[str, Any]:
    """The whole run as promptfoo's output file, with evalh's extras under ``results.evalh`` and
    ``results.aggregates``. ``eval_id``: the run's id (the run store's), else a new one."""
    memo = _Memo()
    rows = [result_to_json(row, memo=memo) for row in run.results]
    return report_document(run, rows, eval_id=eval_id)


def report_document(
    run: RunRecord, rows: list[Any], *, eval_id: str | None = None, config: Any = None
) -> dict[str, Any]:
    """The output file around ``rows`` (the run store keeps it with no rows: its rows are stored one
    by one as they finish). ``config``: the suite's config already redacted, if the caller has it."""
    prompts = [_column_to_json(column) for column in run.aggregates.columns]
    return {
        "evalId": eval_id or new_eval_id(run.started_at),
        "results": {
            "version": 3,
            "timestamp": run.started_at,
            "prompts": prompts,
            "results": rows,
            "stats": _stats(run),
            "evalh": _evalh_block(run),
            "aggregates": aggregates_to_json(run.aggregates),
        },
        "config": redact(run.suite.raw_config) if config is None else config,
        "shareableUrl": None,
        "metadata": {
            "evalhVersion": __version__,
            "pythonVersion": platform.python_version(),
            "platform": sys.platform,
            "arch": platform.machine(),
            "exportedAt": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        },
    }
