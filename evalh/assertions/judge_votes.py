"""Asking a judge more than once: ``samples: k`` of one grader, several graders (``provider: [a, b]``
with ``aggregate``), how their verdicts combine, and which judge gave a verdict.

A judge's verdict is a random draw like the output it grades. k samples of one grader are k distinct
calls: sample i > 0 sends ``seed + i`` (the grader's seed, else 42), so each is its own request and its
own cache entry, and a re-run replays the same k answers. Set the grader's ``temperature`` above 0 for
the samples to differ. The k samples give the majority verdict (a tie fails) and the mean score; the
result records each sample and their agreement rate (the share that sided with the most common verdict).

Several graders each give one (possibly sampled) verdict, combined by ``aggregate``: ``majority`` (more
than half pass; the mean score), ``mean`` (the mean score against the threshold, else the majority) or
``min`` (every grader must pass; the lowest score). A judge's pass is its own verdict and its score
reaching the threshold: judges' scores are higher-is-better.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.model import Measurement, ProviderSpec, Usage
from evalh.stats.agreement import agreement_rate

__all__ = [
    "AGGREGATES",
    "DEFAULT_AGGREGATE",
    "combine_judges",
    "combine_samples",
    "judge_aggregate",
    "judge_identity",
    "judge_samples",
    "sample_spec",
]

AGGREGATES = ("mean", "min", "majority")
DEFAULT_AGGREGATE = "mean"
_DEFAULT_SEED = 42  # judge_core.GRADER_DEFAULTS' seed


def _judge_option(ctx: AssertionContext, key: str) -> Any:
    """The assertion's own ``key``, else the test's ``options.judge.key`` (defaultTest's merged in)."""
    own = ctx.spec.raw.get(key)
    if own is not None:
        return own
    judge = ctx.test.options.get("judge")
    return judge.get(key) if isinstance(judge, Mapping) else None


def judge_samples(ctx: AssertionContext) -> int:
    """How many times to ask each grader (1 unless set; config checks reject anything but k >= 1)."""
    samples = _judge_option(ctx, "samples")
    return samples if isinstance(samples, int) and not isinstance(samples, bool) and samples > 1 else 1


def judge_aggregate(ctx: AssertionContext) -> str:
    aggregate = _judge_option(ctx, "aggregate")
    return aggregate if aggregate in AGGREGATES else DEFAULT_AGGREGATE


def sample_spec(grader: ProviderSpec, index: int) -> ProviderSpec:
    """The grader of sample ``index``: sample 0 as configured, sample i its seed + i (a distinct
    request, so a distinct cache key: the cache never answers k samples with one reply)."""
    if index == 0:
        return grader
    seed = grader.config.get("seed")
    base = seed if isinstance(seed, int) and not isinstance(seed, bool) else _DEFAULT_SEED
    return dataclasses.replace(grader, config={**grader.config, "seed": base + index})


def judge_identity(grader: ProviderSpec, templates: Sequence[Any]) -> dict[str, str]:
    """Which judge gave a verdict: its provider id, its model, and a sha256 of the grading prompt
    templates it was sent (before the test's values are filled in), so a changed judge shows in a diff."""
    model = grader.config.get("model")
    if not isinstance(model, str) or not model:
        model = grader.id.split(":")[-1]
    canonical = json.dumps(list(templates), sort_keys=True, ensure_ascii=False, default=str)
    return {
        "provider": grader.id,
        "model": model,
        "prompt_sha256": hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest(),
    }


def _passed(measured: Measurement, threshold: float | None) -> bool:
    if measured.verdict is False:
        return False
    if threshold is not None and measured.compared:
        return measured.value >= threshold
    return measured.verdict if measured.verdict is not None else measured.value > 0


def _total_usage(outcomes: Sequence[Measurement]) -> Usage:
    total = Usage()
    for measured in outcomes:
        if measured.usage is not None:
            total = total + measured.usage
    return total


def _agreed(
    outcomes: Sequence[Measurement], passed: bool, value: float, reason: str, extra: Mapping[str, Any]
) -> Measurement:
    """``outcomes[0]`` (the caller puts one of the winning side first) with the combined figures. The
    threshold was applied to each outcome already, so the combined verdict stands (``compared`` False)."""
    representative = outcomes[0]
    return dataclasses.replace(
        representative,
        value=value,
        score=None,
        verdict=passed,
        compared=False,
        suffix="",
        plain=reason,
        details={**representative.details, **extra},
        usage=_total_usage(outcomes),
    )


def combine_samples(outcomes: Sequence[Measurement], threshold: float | None) -> Measurement:
    """k samples of one grader: the majority verdict (a tie fails), the mean score, each sample and
    their agreement rate in ``details``."""
    verdicts = [_passed(m, threshold) for m in outcomes]
    passed = verdicts.count(True) * 2 > len(verdicts)
    mean = fmean(m.value for m in outcomes)
    side = next(m for m, v in zip(outcomes, verdicts, strict=True) if v == passed)
    extra = {
        "samples": [{"pass": v, "score": m.value} for m, v in zip(outcomes, verdicts, strict=True)],
        "sample_agreement": agreement_rate(verdicts),
    }
    reason = f"{verdicts.count(True)} of {len(verdicts)} grader samples passed (mean score {mean:.4g})" + (
        f": {side.plain}" if side.plain else ""
    )
    return _agreed([side, *[m for m in outcomes if m is not side]], passed, mean, reason, extra)


def combine_judges(
    outcomes: Sequence[Measurement],
    identities: Sequence[Mapping[str, str]],
    aggregate: str,
    threshold: float | None,
) -> Measurement:
    """Several graders' verdicts on one output, by ``aggregate`` (see the module's doc)."""
    verdicts = [_passed(m, threshold) for m in outcomes]
    scores = [m.value for m in outcomes]
    if aggregate == "min":
        passed, value = all(verdicts), min(scores)
    elif aggregate == "mean" and threshold is not None:
        value = fmean(scores)
        passed = value >= threshold
    else:  # majority, and mean without a threshold
        passed, value = verdicts.count(True) * 2 > len(verdicts), fmean(scores)
    judges = [
        {**identity, "pass": v, "score": m.value}
        for identity, m, v in zip(identities, outcomes, verdicts, strict=True)
    ]
    reason = f"{verdicts.count(True)} of {len(verdicts)} judges passed ({aggregate}: score {value:.4g})"
    side = next((m for m, v in zip(outcomes, verdicts, strict=True) if v == passed), outcomes[0])
    extra = {"judges": judges, "aggregate": aggregate, "judge_agreement": agreement_rate(verdicts)}
    return _agreed([side, *[m for m in outcomes if m is not side]], passed, value, reason, extra)
