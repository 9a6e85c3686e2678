"""A run's repeats as evidence (``--repeat N``): each test's figures over its N draws and its verdict
over them. Computed once by ``runner/aggregates.py`` (with :mod:`evalh.stats.repeats`) and kept, frozen,
in :attr:`evalh.model.Aggregates.repeats`; the reports, the run store and the Python API only read it.

Rates and intervals here are fractions (0-1), as the statistics give them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RepeatSummary", "TestRepeats"]


@dataclass(frozen=True)
class TestRepeats:
    """One test (a test x prompt x provider cell) over its repeats."""

    __test__ = False  # a model class, not a pytest test

    test_index: int
    prompt_index: int
    provider_index: int
    runs: int
    passes: int
    pass_rate: float
    pass_rate_interval: tuple[float, float]  # Wilson 95%
    pass_all: bool  # pass^N: every repeat passed
    pass_any: bool  # pass@N: at least one did
    flaky: bool  # some passed and some did not
    mean_score: float | None  # over the repeats that did not error; None if all did
    mean_score_interval: tuple[float, float] | None  # t 95% interval of that mean
    passed: bool  # its verdict over the repeats: pass rate >= the required rate


@dataclass(frozen=True)
class RepeatSummary:
    """Every test over ``count`` repeats, and the pass rate a test needs (``--repeat-pass-rate``)."""

    count: int
    required_pass_rate: float
    tests: tuple[TestRepeats, ...] = ()

    @property
    def tests_passed(self) -> int:
        return sum(1 for test in self.tests if test.passed)

    @property
    def flaky(self) -> int:
        return sum(1 for test in self.tests if test.flaky)

    @property
    def pass_rate(self) -> float:
        """Percentage of tests whose verdict over their repeats passed; 100.0 without tests."""
        return 100.0 * self.tests_passed / len(self.tests) if self.tests else 100.0
