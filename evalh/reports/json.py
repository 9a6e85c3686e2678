"""A :class:`~evalh.model.RunResult` as promptfoo's JSON output file (``-o out.json``), plus evalh's extras.

The shape (documented in ``schemas/report.schema.json``)::

    {evalId, results: {version: 3, timestamp, prompts[], results[], stats, evalh, aggregates},
     config, shareableUrl: null, metadata: {evalhVersion, pythonVersion, platform, arch, exportedAt}}

``results.results[]`` rows are promptfoo ``EvaluateResult`` objects (:func:`result_to_json`, also used by
the JSONL stream). Differences from promptfoo: ``promptIdx`` is the prompt's index in the config's
``prompts`` (``providerIdx`` gives the provider's), and keys holding secrets (``apiKey``, ``authorization``,
...) are replaced by ``"[REDACTED]"`` wherever they appear.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
import secrets
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evalh import __version__
from evalh.model import (
    AssertionSpec,
    GradedAssertion,
    Prompt,
    RunResult,
    Status,
    TestCase,
    TestResult,
    Usage,
)
from evalh.reports.columns import Column, columns_of
from evalh.reports.serialize import redact
from evalh.reports.textutil import output_text

__all__ = ["flatten_components", "new_memo", "result_to_json", "to_promptfoo_json", "usage_to_json"]

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
    """Converted specs and tests, reused by every row sharing them (the report is read-only data).

    Keyed by ``id()``; the object is kept alongside so an id is never reused while cached.
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple[object, Any]] = {}

    def get(self, obj: object, build: Callable[[], Any]) -> Any:
        hit = self._items.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = build()
        self._items[id(obj)] = (obj, value)
        return value


def _as_written(spec: AssertionSpec, memo: _Memo) -> dict[str, Any]:
    """The assertion as the config wrote it, secrets redacted (shared by ``testCase`` and components)."""
    return memo.get(spec.raw, lambda: redact(spec.raw))  # type: ignore[no-any-return]


def _assertion_to_json(spec: AssertionSpec, memo: _Memo) -> dict[str, Any]:
    out: dict[str, Any] = dict(_as_written(spec, memo)) if spec.raw else {}
    out["type"] = spec.full_type
    for key in ("threshold", "weight", "metric"):
        if out.get(key) is None:
            out.pop(key, None)
    if spec.value is not None:
        out["value"] = redact(spec.value) if isinstance(spec.value, Mapping) else spec.value
    if spec.threshold is not None:
        out["threshold"] = spec.threshold
    if spec.weight != 1.0 or "weight" in out:
        out["weight"] = spec.weight
    if spec.metric:
        out["metric"] = spec.metric
    return out


def _component_to_json(graded: GradedAssertion, memo: _Memo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pass": graded.passed,
        "score": graded.score,
        "reason": graded.reason,
        "assertion": memo.get(graded.spec, lambda: _assertion_to_json(graded.spec, memo)),
        "metadata": dict(graded.details),
    }
    if graded.error:
        out["error"] = True
    if graded.usage is not None:
        out["tokensUsed"] = usage_to_json(graded.usage)
    if graded.children:
        out["componentResults"] = flatten_components(graded.children, memo)
    return out


def flatten_components(graded: Iterable[GradedAssertion], memo: _Memo | None = None) -> list[dict[str, Any]]:
    """Component results as promptfoo lists them: each assert-set, then its children flattened after it."""
    memo = memo or _Memo()
    out: list[dict[str, Any]] = []
    for item in graded:
        component = _component_to_json(item, memo)
        out.append(component)
        out.extend(component.get("componentResults", ()))
    return out


def _prompt_id(prompt: Prompt) -> str:
    if prompt.id:
        return prompt.id
    return hashlib.sha256(f"{prompt.label}:{output_text(prompt.raw)}".encode(errors="replace")).hexdigest()


def _test_case_to_json(test: TestCase, memo: _Memo) -> dict[str, Any]:
    out: dict[str, Any] = {"vars": dict(test.vars)}
    if test.description is not None:
        out["description"] = test.description
    out["assert"] = [
        _as_written(spec, memo) if spec.raw else _assertion_to_json(spec, memo) for spec in test.asserts
    ]
    out["options"] = redact(test.options)
    out["metadata"] = dict(test.metadata)
    if test.threshold is not None:
        out["threshold"] = test.threshold
    if test.has_output:
        out["output"] = test.output
    return out


def _error_text(row: TestResult) -> str | None:
    if row.status is Status.PASS:
        return None
    if row.status is Status.FAIL:
        return row.reason
    return row.error or row.reason or "Evaluation error"


def _grading_result(row: TestResult, memo: _Memo) -> dict[str, Any] | None:
    if row.status is Status.ERROR and not row.assertions:
        return None
    return {
        "pass": row.status is Status.PASS,
        "score": row.score,
        "reason": row.reason,
        "namedScores": dict(row.named_scores),
        "namedScoreWeights": dict(row.named_score_weights),
        "tokensUsed": usage_to_json(row.grading_usage),
        "componentResults": flatten_components(row.assertions, memo),
        "assertion": None,
    }


def result_to_json(row: TestResult, *, memo: _Memo | None = None) -> dict[str, Any]:
    """One row as promptfoo's ``EvaluateResult`` (one JSONL line, one ``results.results[]`` item).

    ``memo`` (from :func:`new_memo`) shares the conversion of specs and tests between rows; the dicts
    returned may then share sub-objects, so treat them as read-only.
    """
    memo = memo or _Memo()
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
        "promptId": _prompt_id(row.prompt),
        "description": row.test.description,
        "provider": {"id": row.provider.id, "label": row.provider.display},
        "prompt": {"raw": output_text(row.rendered_prompt), "label": row.prompt.label},
        "vars": dict(row.test.vars),
        "testCase": memo.get(row.test, lambda: _test_case_to_json(row.test, memo)),
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
        "metadata": dict(row.test.metadata),
        "gradingResult": _grading_result(row, memo),
    }


def _column_to_json(column: Column, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    named_sums: dict[str, float] = {}
    named_counts: dict[str, int] = {}
    named_weights: dict[str, float] = {}
    usage = Usage()
    assert_pass = assert_fail = 0
    for row, data in zip(column.rows, rows, strict=True):
        usage = usage + row.usage
        for name, value in row.named_scores.items():
            named_sums[name] = named_sums.get(name, 0.0) + value
            named_counts[name] = named_counts.get(name, 0) + 1
        for name, weight in row.named_score_weights.items():
            named_weights[name] = named_weights.get(name, 0.0) + weight
        components = data["gradingResult"]["componentResults"] if data["gradingResult"] else ()
        passed = sum(1 for c in components if c["pass"])
        assert_pass += passed
        assert_fail += len(components) - passed
    return {
        "id": _prompt_id(column.prompt),
        "raw": output_text(column.prompt.raw),
        "label": column.prompt.label,
        "provider": column.provider.display,
        "promptIdx": column.prompt_index,
        "providerIdx": column.provider_index,
        "metrics": {
            "score": sum(r.score for r in column.rows),
            "testPassCount": sum(1 for r in column.rows if r.status is Status.PASS),
            "testFailCount": sum(1 for r in column.rows if r.status is Status.FAIL),
            "testErrorCount": sum(1 for r in column.rows if r.status is Status.ERROR),
            "assertPassCount": assert_pass,
            "assertFailCount": assert_fail,
            "totalLatencyMs": sum(r.latency_ms or 0.0 for r in column.rows),
            "tokenUsage": usage_to_json(usage),
            "namedScores": named_sums,
            "namedScoresCount": named_counts,
            "namedScoreWeights": named_weights,
            "cost": sum(r.cost or 0.0 for r in column.rows),
        },
    }


def _stats(run: RunResult) -> dict[str, Any]:
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


def _evalh_block(run: RunResult) -> dict[str, Any]:
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
    }


def _eval_id(started_at: str) -> str:
    stamp = started_at[:19]  # 2025-01-02T03:04:05, without fraction or zone, like promptfoo
    return f"eval-{secrets.token_urlsafe(3)[:3]}-{stamp}"


def new_memo() -> _Memo:
    """A conversion cache for :func:`result_to_json` over many rows (see JsonlStream)."""
    return _Memo()


def to_promptfoo_json(run: RunResult) -> dict[str, Any]:
    """The whole run as promptfoo's output file, with evalh's extras under ``results.evalh`` and
    ``results.aggregates``."""
    memo = _Memo()
    rows = [result_to_json(row, memo=memo) for row in run.results]
    by_row = {id(row): data for row, data in zip(run.results, rows, strict=True)}
    prompts = [_column_to_json(c, [by_row[id(r)] for r in c.rows]) for c in columns_of(run)]
    return {
        "evalId": _eval_id(run.started_at),
        "results": {
            "version": 3,
            "timestamp": run.started_at,
            "prompts": prompts,
            "results": rows,
            "stats": _stats(run),
            "evalh": _evalh_block(run),
            "aggregates": dict(run.aggregates),
        },
        "config": redact(run.suite.raw_config),
        "shareableUrl": None,
        "metadata": {
            "evalhVersion": __version__,
            "pythonVersion": platform.python_version(),
            "platform": sys.platform,
            "arch": platform.machine(),
            "exportedAt": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        },
    }
