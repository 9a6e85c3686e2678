"""The whole run's verdict and its pass rate, decided here alone.

``evalh run``'s and ``evalh merge``'s exit codes, :attr:`evalh.RunRecord.ok`, and the pass rate of the
summary, the reports, the run store and a comparison all come from these two functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalh.model.aggregates import RunRecord

__all__ = ["pass_rate", "run_passed"]


def pass_rate(passed: int, rows: int) -> float:
    """Percentage of ``rows`` that passed (errors count against it); 100.0 without rows."""
    return 100.0 * passed / rows if rows else 100.0


def run_passed(run: RunRecord, *, fail_under: float | None = None, regressed: bool | None = None) -> bool:
    """Whether ``run`` passes: never when it was stopped early (rows are missing); with ``--fail-on
    regressions`` (``regressed`` given: new failures since the baseline), only new failures decide;
    else its pass rate must reach ``fail_under`` (``--fail-under``), by default 100: every row passed.
    With repeats (``--repeat`` above 1) that pass rate is the share of tests whose verdict over their
    repeats passed (``--repeat-pass-rate``), not the share of rows."""
    if run.interrupted:
        return False
    if regressed is not None:
        return not regressed
    repeats = run.aggregates.repeats
    rate = run.pass_rate if repeats is None else repeats.pass_rate
    return rate >= (100.0 if fail_under is None else fail_under)
