"""Is a change between two runs real? The statistics of a comparison (``evalh diff``, ``run --baseline``).

A test here is one test x prompt x provider cell (:func:`~evalh.store.identity.cell_key`); its repeats are
its rows. Two runs' tests are matched by that identity.

* Both runs have repeats: each shared test's pass counts get a one-sided Fisher's exact test each way,
  Holm's step-down over the tests compared holds the family-wise error at ``alpha``, and the test is
  **regressed** or **improved** (significant after Holm), **inconclusive** (not significant after Holm,
  but significant alone or its pass rate moved by 20 points or more) or **unchanged**; the change in pass
  rate gets Newcombe's hybrid score interval. The gate (``--fail-on regressions``) counts only the
  regressed tests, and a sentence says how large a drop the comparison can see.
* Otherwise (one run per test): McNemar's exact test over the shared tests says whether the change in
  pass rate is beyond chance; a pass -> fail flip stays a regression (:mod:`evalh.store.compare`).
* Mean scores of the shared tests: a seeded paired bootstrap interval of the mean change.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from evalh.model.options import DEFAULT_ALPHA
from evalh.reports.matrix import column_label
from evalh.stats.means import mean_interval
from evalh.stats.power import detectable_drop
from evalh.stats.proportions import difference_interval
from evalh.stats.resampling import DEFAULT_RESAMPLES, DEFAULT_SEED, paired_interval
from evalh.stats.significance import fisher_better, fisher_worse, holm, mcnemar_two_sided, mcnemar_worse

__all__ = [
    "DEFAULT_ALPHA",
    "ComparisonStats",
    "PairedTest",
    "ScoreChange",
    "TestChange",
    "TestRow",
    "compare_tests",
]

DROP_THAT_MATTERS = 0.20  # a change of pass rate this large is worth knowing about (20 points)
POWER = 0.8  # detectable_drop's default: the chance of seeing the drop it names
# above this many shared tests the mean change gets a t interval: the bootstrap's cost grows with tests x
# resamples (12 s for 50,000 tests), and with that many tests the mean's distribution is normal enough
# that the percentile bootstrap gives the t interval's figures
BOOTSTRAP_LIMIT = 2000


class TestRow(NamedTuple):
    """What the statistics need of a row: its test's identity and labels, its verdict and score."""

    cell: str
    test: str
    prompt: str
    provider: str
    passed: bool
    score: float | None


@dataclass
class _Cell:
    test: str
    prompt: str
    provider: str
    passes: int = 0
    runs: int = 0
    scores: list[float] = field(default_factory=list)

    @property
    def mean_score(self) -> float | None:
        return math.fsum(self.scores) / len(self.scores) if self.scores else None


def _cells(rows: Iterable[TestRow]) -> dict[str, _Cell]:
    cells: dict[str, _Cell] = {}
    for row in rows:
        cell = cells.setdefault(row.cell, _Cell(row.test, row.prompt, row.provider))
        cell.runs += 1
        cell.passes += row.passed
        if row.score is not None and math.isfinite(row.score):
            cell.scores.append(row.score)
    return cells


@dataclass(frozen=True)
class TestChange:
    """One shared test over its repeats in both runs; the p-values are Holm-adjusted."""

    test: str
    prompt: str
    provider: str
    before: tuple[int, int]  # (passes, runs)
    after: tuple[int, int]
    change_interval: tuple[float, float]
    p_worse: float
    p_better: float
    verdict: str  # regressed, improved, inconclusive, unchanged

    @property
    def change(self) -> float:
        return self.after[0] / self.after[1] - self.before[0] / self.before[1]

    @property
    def p_value(self) -> float:
        """The adjusted p-value of the direction the pass rate moved."""
        return self.p_better if self.change > 0 else self.p_worse

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "prompt": self.prompt,
            "provider": self.provider,
            "before": _counts_json(self.before),
            "after": _counts_json(self.after),
            "change": self.change,
            "changeInterval": list(self.change_interval),
            "pValue": self.p_value,
            "pValueWorse": self.p_worse,
            "pValueBetter": self.p_better,
            "verdict": self.verdict,
        }

    def line(self) -> str:
        low, high = self.change_interval
        return (
            f"  - {_one_line(self.test)} ({_one_line(column_label(self.provider, self.prompt))}): "
            f"{_counts(self.before)} -> {_counts(self.after)}, {self.change * 100:+.0f} points "
            f"[{low * 100:+.0f} to {high * 100:+.0f}], p = {_p(self.p_value)}"
        )


def _counts_json(counts: tuple[int, int]) -> dict[str, Any]:
    return {"passes": counts[0], "runs": counts[1], "passRate": counts[0] / counts[1]}


def _counts(counts: tuple[int, int]) -> str:
    return f"{counts[0]}/{counts[1]} {100 * counts[0] / counts[1]:.0f}%"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 0.001 else f"{value:.1e}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class PairedTest:
    """McNemar's exact test over the tests both runs share, one run each."""

    shared: int
    pass_to_fail: int
    fail_to_pass: int
    p_value: float  # two-sided: is the change beyond chance either way?
    p_worse: float  # one-sided: did more tests break than chance allows?

    def to_json(self) -> dict[str, Any]:
        return {
            "test": "mcnemar-exact",
            "shared": self.shared,
            "passToFail": self.pass_to_fail,
            "failToPass": self.fail_to_pass,
            "pValue": self.p_value,
            "pValueWorse": self.p_worse,
        }

    def sentence(self, alpha: float) -> str:
        verdict = "beyond chance" if self.p_value <= alpha else "within chance"
        return (
            f"McNemar's exact test over the {self.shared} tests both runs share ({self.pass_to_fail} "
            f"pass -> fail, {self.fail_to_pass} fail -> pass): p = {_p(self.p_value)}, the change in pass "
            f"rate is {verdict} at alpha {alpha:g}."
        )


@dataclass(frozen=True)
class ScoreChange:
    """The mean change of the shared tests' mean scores, with a seeded paired bootstrap interval."""

    tests: int
    before: float
    after: float
    interval: tuple[float, float]

    @property
    def bootstrapped(self) -> bool:
        return self.tests <= BOOTSTRAP_LIMIT

    def to_json(self) -> dict[str, Any]:
        method: dict[str, Any] = {"method": "paired-bootstrap-percentile"}
        method |= {"resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED}
        return {
            "tests": self.tests,
            "before": self.before,
            "after": self.after,
            "change": self.after - self.before,
            "changeInterval": list(self.interval),
            **(method if self.bootstrapped else {"method": "paired-t"}),
        }

    def sentence(self) -> str:
        low, high = self.interval
        method = "paired bootstrap" if self.bootstrapped else "paired t"
        return (
            f"Mean score over the {self.tests} shared tests: {self.before:.3f} -> {self.after:.3f} "
            f"({self.after - self.before:+.3f}, 95% {method} interval {low:+.3f} to {high:+.3f})."
        )


@dataclass(frozen=True)
class ComparisonStats:
    """A comparison's statistics: per test over repeats (both runs have them) or McNemar's test."""

    alpha: float
    tests: list[TestChange] | None = None  # None: not both runs have repeats
    paired: PairedTest | None = None
    scores: ScoreChange | None = None
    power: str = ""  # how large a drop the per-test comparison can see

    @property
    def regressed(self) -> list[TestChange]:
        """The significant regressions (empty without repeats: row flips decide then)."""
        return [test for test in self.tests or () if test.verdict == "regressed"]

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"alpha": self.alpha}
        if self.tests is not None:
            document["tests"] = [test.to_json() for test in self.tests]
            document["method"] = "fisher-exact-one-sided-holm"
            document["changeIntervalMethod"] = "newcombe-hybrid-score"
            document["regressedCount"] = len(self.regressed)
            document["power"] = self.power
        if self.paired is not None:
            document["paired"] = self.paired.to_json()
        if self.scores is not None:
            document["meanScore"] = self.scores.to_json()
        document["sentences"] = self.sentences()  # what the console says beside its tables (summary.md)
        return document

    def sentences(self) -> list[str]:
        """The comparison's plain-language findings: the power, McNemar's test, the mean score's change."""
        found = [self.power if self.tests is not None else ""]
        if self.paired is not None:
            found.append(self.paired.sentence(self.alpha))
        if self.scores is not None:
            found.append(self.scores.sentence())
        return [sentence for sentence in found if sentence]

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.tests is not None:
            out.append(
                f"Tests compared over their repeats ({len(self.tests)}; one-sided Fisher's exact test, "
                f"Holm at alpha {self.alpha:g}; change in points with a 95% Newcombe interval):"
            )
            for verdict, title in (
                ("regressed", "Regressed"),
                ("improved", "Improved"),
                ("inconclusive", "Inconclusive (not significant once the tests compared are counted)"),
            ):
                chosen = [test for test in self.tests if test.verdict == verdict]
                if chosen:
                    out.append(f"{title} ({len(chosen)}):")
                    out.extend(test.line() for test in chosen)
            out.append(f"Unchanged: {sum(test.verdict == 'unchanged' for test in self.tests)}")
        out.extend(self.sentences())
        return [line for line in out if line]


def compare_tests(
    before_rows: Iterable[TestRow], after_rows: Iterable[TestRow], *, alpha: float = DEFAULT_ALPHA
) -> ComparisonStats:
    """The statistics of two runs' shared tests (the tests new or removed are the row comparison's)."""
    before, after = _cells(before_rows), _cells(after_rows)
    shared = [key for key in after if key in before]
    pairs = [(before[key], after[key]) for key in shared]
    scores = _score_change(pairs)
    if not (_has_repeats(before) and _has_repeats(after)):
        return ComparisonStats(alpha, paired=_paired(pairs), scores=scores)
    tests = _test_changes(pairs, alpha)
    return ComparisonStats(alpha, tests=tests, scores=scores, power=_power_sentence(before, shared, alpha))


def _has_repeats(cells: Mapping[str, _Cell]) -> bool:
    return any(cell.runs > 1 for cell in cells.values())


def _test_changes(pairs: list[tuple[_Cell, _Cell]], alpha: float) -> list[TestChange]:
    worse = [fisher_worse(new.passes, new.runs, old.passes, old.runs) for old, new in pairs]
    better = [fisher_better(new.passes, new.runs, old.passes, old.runs) for old, new in pairs]
    worse_rejected, worse_adjusted = holm(worse, alpha)
    better_rejected, better_adjusted = holm(better, alpha)
    changes = []
    for index, (old, new) in enumerate(pairs):
        moved = abs(new.passes / new.runs - old.passes / old.runs) >= DROP_THAT_MATTERS - 1e-9
        if worse_rejected[index]:
            verdict = "regressed"
        elif better_rejected[index]:
            verdict = "improved"
        elif moved or min(worse[index], better[index]) <= alpha:
            verdict = "inconclusive"
        else:
            verdict = "unchanged"
        changes.append(
            TestChange(
                new.test,
                new.prompt,
                new.provider,
                (old.passes, old.runs),
                (new.passes, new.runs),
                difference_interval(new.passes, new.runs, old.passes, old.runs),
                worse_adjusted[index],
                better_adjusted[index],
                verdict,
            )
        )
    return changes


def _paired(pairs: list[tuple[_Cell, _Cell]]) -> PairedTest | None:
    """McNemar's test on each shared test's verdict (every run passed) in both runs."""
    if not pairs:
        return None
    pass_to_fail = sum(old.passes == old.runs and new.passes < new.runs for old, new in pairs)
    fail_to_pass = sum(old.passes < old.runs and new.passes == new.runs for old, new in pairs)
    return PairedTest(
        len(pairs),
        pass_to_fail,
        fail_to_pass,
        mcnemar_two_sided(pass_to_fail, fail_to_pass),
        mcnemar_worse(pass_to_fail, fail_to_pass),
    )


def _score_change(pairs: list[tuple[_Cell, _Cell]]) -> ScoreChange | None:
    scored = [
        (old.mean_score, new.mean_score)
        for old, new in pairs
        if old.mean_score is not None and new.mean_score is not None
    ]
    if len(scored) < 2:
        return None
    befores = [old for old, _ in scored]
    afters = [new for _, new in scored]
    changes = [new - old for old, new in scored]
    n = len(scored)
    interval = paired_interval(changes) if n <= BOOTSTRAP_LIMIT else mean_interval(changes)
    return ScoreChange(n, math.fsum(befores) / n, math.fsum(afters) / n, interval)


def _power_sentence(before: Mapping[str, _Cell], shared: list[str], alpha: float) -> str:
    """How large a drop the per-test comparison can see: with the fewest repeats of a shared test and
    the baseline's mean pass rate, at the level Holm asks of the first of the tests compared."""
    if not shared:
        return ""
    runs = min(before[key].runs for key in shared)
    base_rate = math.fsum(before[key].passes / before[key].runs for key in shared) / len(shared)
    drop = detectable_drop(base_rate, runs, alpha / len(shared))
    level = f"alpha {alpha:g} over {len(shared)} test{'s' if len(shared) != 1 else ''}"
    if drop is None:
        return (
            f"Too weak to see a regression: with {runs} repeats, no drop from a {base_rate:.0%} pass rate "
            f"can be told from noise at {level}."
        )
    weak = "Too weak to see small drops: " if drop > DROP_THAT_MATTERS else ""
    return (
        f"{weak}with {runs} repeats, drops under about {drop * 100:.0f} points (from a {base_rate:.0%} pass "
        f"rate) cannot be told from noise at {level} (power {POWER:.0%})."
    )
