"""A :class:`~evalh.model.RunRecord` as promptfoo's JSON output file (``-o out.json``), plus evalh's extras.

The shape (documented in ``schemas/report.schema.json``)::

    {evalId, results: {version: 3, timestamp, prompts[], results[], stats, evalh, aggregates},
     config, shareableUrl: null, metadata: {evalhVersion, pythonVersion, platform, arch, exportedAt}}

``results.results[]`` rows and ``results.prompts[]`` columns are written by the row codec
(:mod:`evalh.reports.codec`, also used by the JSONL stream), which says how they differ from promptfoo's.
Keys holding secrets (``apiKey``, ``authorization``, ...) are replaced by ``"[REDACTED]"`` wherever they
appear.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import platform
import re
import secrets
import sys
from typing import Any

from evalh.common.version import __version__
from evalh.model import Aggregates, RowFigures, RunRecord, ScoreStats, ShardInfo, Status, TypeFigures, Usage
from evalh.reports.codec import (
    MEMO_LIMIT,
    Memo,
    column_to_json,
    flatten_components,
    new_memo,
    result_to_json,
    usage_to_json,
)
from evalh.reports.codec_repeats import repeats_to_json
from evalh.secrets import redact_config as redact

__all__ = [  # the row conversions are the codec's (reports/codec.py), named here for the report's callers
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
        # evalh's: a 95% interval of the suite's pass rate (fractions), each test counted once
        "passRateInterval": list(run.aggregates.pass_rate_interval),
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
        **({"repeats": repeats_to_json(repeats)} if (repeats := run.aggregates.repeats) is not None else {}),
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


def to_promptfoo_json(run: RunRecord, *, eval_id: str | None = None) -> dict[str, Any]:
    """The whole run as promptfoo's output file, with evalh's extras under ``results.evalh`` and
    ``results.aggregates``. ``eval_id``: the run's id (the run store's), else a new one."""
    memo = Memo()
    rows = [result_to_json(row, memo=memo) for row in run.results]
    return report_document(run, rows, eval_id=eval_id)


def report_document(
    run: RunRecord, rows: list[Any], *, eval_id: str | None = None, config: Any = None
) -> dict[str, Any]:
    """The output file around ``rows`` (the run store keeps it with no rows: its rows are stored one
    by one as they finish). ``config``: the suite's config already redacted, if the caller has it."""
    prompts = [column_to_json(column) for column in run.aggregates.columns]
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
