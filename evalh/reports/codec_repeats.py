"""``results.evalh.repeats`` written: each test (test x prompt x provider) over the run's repeats, rates
as fractions 0-1 (:func:`evalh.reports.codec_read.repeats_from_json` reads it back). Part of the report
codec (:mod:`evalh.reports.codec`), in a module of its own to keep each small."""

from __future__ import annotations

from typing import Any

from evalh.model import RepeatSummary, TestRepeats

__all__ = ["repeats_to_json"]


def _test_repeats_to_json(test: TestRepeats) -> dict[str, Any]:
    interval = test.mean_score_interval
    return {
        "testIdx": test.test_index,
        "promptIdx": test.prompt_index,
        "providerIdx": test.provider_index,
        "runs": test.runs,
        "passes": test.passes,
        "passRate": test.pass_rate,
        "passRateInterval": list(test.pass_rate_interval),
        "passAll": test.pass_all,
        "passAny": test.pass_any,
        "flaky": test.flaky,
        "meanScore": test.mean_score,
        "meanScoreInterval": None if interval is None else list(interval),
        "pass": test.passed,
    }


def repeats_to_json(summary: RepeatSummary) -> dict[str, Any]:
    """``results.evalh.repeats``: each test (test x prompt x provider) over the run's repeats; rates are
    fractions 0-1 (codec_read's ``repeats_from_json`` reads it back)."""
    return {
        "count": summary.count,
        "requiredPassRate": summary.required_pass_rate,
        "testsPassed": summary.tests_passed,
        "tests": [_test_repeats_to_json(test) for test in summary.tests],
    }
