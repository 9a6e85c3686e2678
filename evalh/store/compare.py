"""Two runs compared row by row (``evalh diff``, ``evalh run --baseline``), on JSON report dicts.

Rows are matched by their identity (:func:`~evalh.store.identity.row_key`: description, vars, prompt,
provider, repeat), never by position. Every row lands in exactly one group:

* **regressions**: passed in the baseline, fail or error now;
* **new failures**: not in the baseline, and fail or error now;
* **fixes**: failed or errored in the baseline, pass now;
* **score changes**: the same verdict, the score moved by more than the tolerance;
* **added** (passing) and **removed** tests; the rest is unchanged.

Regressions and new failures are the new failures a CI gate cares about (:attr:`Comparison.failed`).
A row a person rated (:mod:`evalh.store.ratings`) compares with the rating's verdict, marked ``rated``,
when the other run's row is rated too. When only one of the two is rated, the two graded verdicts are
compared (``ratedIn`` names the run that has the rating): a person's verdict is no grade the other run's
grader can be measured against, and a rated baseline would otherwise turn every place a reviewer disagreed
with the grader into a change of the next run.
When both runs have repeats, a row's flip is one draw, not evidence: the gate counts the tests that got
significantly worse over their repeats instead (:mod:`evalh.store.compare_stats`), and new tests that fail.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from evalh.model.verdict import pass_rate
from evalh.reports.codec import graded_row
from evalh.reports.codec_read import (
    row_error,
    row_grading,
    row_prompt,
    row_provider,
    row_rating,
    row_score,
)
from evalh.reports.matrix import column_label, rating_note
from evalh.store.compare_stats import DEFAULT_ALPHA, ComparisonStats, TestRow, compare_tests
from evalh.store.identity import cell_key, describe_test, row_key, stored_status
from evalh.store.judges import judge_changes, noting_judges

__all__ = [
    "DEFAULT_TOLERANCE",
    "Comparison",
    "RowChange",
    "RunRows",
    "compare_reports",
    "compare_rows",
    "keyed_rows",
]

DEFAULT_TOLERANCE = 0.01
_REASON_LIMIT = 160


@dataclass(frozen=True)
class RowState:
    status: str  # pass, fail, error
    score: float | None
    reason: str
    rated: bool = False  # the verdict is a person's rating (the reason: who rated it, and why)

    def to_json(self) -> dict[str, Any]:
        rated = {"rated": True} if self.rated else {}  # an unrated row's JSON as before ratings
        return {"status": self.status, "score": self.score, "reason": self.reason, **rated}

    def shown(self) -> str:
        score = "" if self.score is None else f" {self.score:.2f}"
        return f"{self.status.upper()}{score}" + (" (rated)" if self.rated else "")


@dataclass(frozen=True)
class RowChange:
    """One test's row in both runs (``before`` None: added; ``after`` None: removed)."""

    key: str
    test: str
    prompt: str
    provider: str
    before: RowState | None
    after: RowState | None
    rated_in: str = ""  # "baseline" or "current": only that run's row is rated, so graded verdicts compared

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "test": self.test,
            "prompt": self.prompt,
            "provider": self.provider,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            **({"ratedIn": self.rated_in} if self.rated_in else {}),
        }

    def line(self) -> str:
        where = f"{self.test} ({column_label(self.provider, self.prompt)})"
        states = " -> ".join(state.shown() for state in (self.before, self.after) if state is not None)
        if self.before and self.after and self.before.score is not None and self.after.score is not None:
            delta = self.after.score - self.before.score
            states += f" ({delta:+.2f})" if delta else ""
        reason = self.after.reason if self.after and self.after.status != "pass" else ""
        reason = reason if len(reason) <= _REASON_LIMIT else reason[: _REASON_LIMIT - 1] + "…"
        note = f" [graded verdicts: only the {self.rated_in}'s row is rated]" if self.rated_in else ""
        return f"  - {_one_line(where)}: {states}{note}" + (f": {_one_line(reason)}" if reason else "")


@dataclass(frozen=True)
class RunSide:
    id: str
    rows: int
    passed: int

    @property
    def pass_rate(self) -> float:
        return pass_rate(self.passed, self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "rows": self.rows, "passed": self.passed, "passRate": self.pass_rate}


@dataclass(frozen=True)
class Comparison:
    baseline: RunSide
    current: RunSide
    tolerance: float
    regressions: list[RowChange] = field(default_factory=list)
    new_failures: list[RowChange] = field(default_factory=list)
    fixes: list[RowChange] = field(default_factory=list)
    score_changes: list[RowChange] = field(default_factory=list)
    added: list[RowChange] = field(default_factory=list)
    removed: list[RowChange] = field(default_factory=list)
    unchanged: int = 0
    statistics: ComparisonStats | None = None
    # warnings: an assertion type the two runs had judged by other judges (store/judges.py)
    judge_changes: tuple[str, ...] = ()

    @property
    def repeated(self) -> bool:
        """Both runs have repeats: tests, not rows, are compared."""
        return self.statistics is not None and self.statistics.tests is not None

    @property
    def failed(self) -> int:
        """New failures: regressions plus new tests that fail (what ``--fail-on regressions`` gates); with
        repeats, the significant regressions instead of the rows that flipped."""
        if self.repeated:
            assert self.statistics is not None
            return len(self.statistics.regressed) + len(self.new_failures)
        return len(self.regressions) + len(self.new_failures)

    def to_json(self) -> dict[str, Any]:
        groups = ("regressions", "new_failures", "fixes", "score_changes", "added", "removed")
        return {
            "baseline": self.baseline.to_json(),
            "current": self.current.to_json(),
            "tolerance": self.tolerance,
            **{_camel(name): [change.to_json() for change in getattr(self, name)] for name in groups},
            "unchanged": self.unchanged,
            "newFailureCount": self.failed,
            **({"statistics": self.statistics.to_json()} if self.statistics is not None else {}),
        }

    def lines(self) -> list[str]:
        """The comparison as plain text, one test per line."""
        base, now = self.baseline, self.current
        out = [
            f"Comparing {now.id} ({now.rows} rows, {now.pass_rate:.1f}% passed) with the baseline "
            f"{base.id} ({base.rows} rows, {base.pass_rate:.1f}% passed)"
        ]
        for title, changes in self._groups():
            if changes:
                out.append(f"{title} ({len(changes)}):")
                out.extend(change.line() for change in changes)
        if self.repeated:
            out.append(
                f"Rows that flipped (single draws, not evidence alone): {len(self.regressions)} pass -> "
                f"fail, "
                f"{len(self.fixes)} fail -> pass"
            )
        else:
            out.append(f"Unchanged: {self.unchanged}")
        out.extend(self.statistics.lines() if self.statistics is not None else ())
        out.append(self._verdict())
        return out

    def _groups(self) -> tuple[tuple[str, list[RowChange]], ...]:
        rows_flipped = (
            ("Regressions: passed in the baseline, fail now", self.regressions),
            ("Fixed: failed in the baseline, pass now", self.fixes),
            (f"Score changes beyond {self.tolerance:g}", self.score_changes),
        )
        return (
            *(() if self.repeated else rows_flipped),
            ("New tests that fail", self.new_failures),
            ("New tests that pass", self.added),
            ("Removed: in the baseline only", self.removed),
        )

    def _verdict(self) -> str:
        if not self.repeated:
            if self.failed:
                return f"{self.failed} new failure(s) since the baseline."
            return "No new failures since the baseline."
        assert self.statistics is not None
        names = ", ".join(_one_line(test.test) for test in self.statistics.regressed)
        counted = [f"{len(self.statistics.regressed)} significant regression(s)"] if names else []
        counted += [f"{len(self.new_failures)} new failing row(s)"] if self.new_failures else []
        if not counted:
            return "No significant regression since the baseline."
        return " and ".join(counted) + " since the baseline" + (f": {names}." if names else ".")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _state(row: Mapping[str, Any]) -> RowState:
    status = stored_status(row)
    score = row_score(row)
    number = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
    rating = row_rating(row)
    if rating is not None:
        note = rating_note(str(rating.get("reviewer") or ""), str(rating.get("comment") or ""))
        return RowState(status, number, note if status != "pass" else "", rated=True)
    reason = row_error(row) or row_grading(row).get("reason") or ""
    return RowState(status, number, str(reason) if status != "pass" else "")


@dataclass(frozen=True, slots=True)
class _Kept:
    """What a comparison keeps of a row: its state and labels, not the row (a run's rows are read one at
    a time, so two runs of 50,000 rows are never held whole)."""

    state: RowState
    graded: RowState  # the grader's verdict (the same as state unless a person rated the row)
    test: str
    prompt: str
    provider: str
    cell: str  # the test x prompt x provider cell, shared by its repeats

    def test_row(self) -> TestRow:
        passed = self.state.status == "pass"
        return TestRow(self.cell, self.test, self.prompt, self.provider, passed, self.state.score)


def _kept(row: Mapping[str, Any]) -> _Kept:
    state = _state(row)
    return _Kept(
        state,
        _state(graded_row(row)[0]) if state.rated else state,
        describe_test(row),
        _label(row_prompt(row), "label", "raw"),
        _label(row_provider(row), "label", "id"),
        cell_key(row),
    )


def _keyed(rows: Iterable[Mapping[str, Any]]) -> dict[str, _Kept]:
    return {key: _kept(row) for key, row in keyed_rows(rows)}


def keyed_rows(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each row with its key in a comparison (:attr:`RowChange.key`): its identity, and for a repeated
    identity (two identical tests) ``#2``, ``#3``... in order."""
    seen: set[str] = set()
    for row in rows:
        key = base = row_key(row)
        count = 1
        while key in seen:
            count += 1
            key = f"{base}#{count}"
        seen.add(key)
        yield key, row


def _label(value: Any, *keys: str) -> str:
    if isinstance(value, Mapping):
        return str(next((value[k] for k in keys if value.get(k)), ""))
    return str(value or "")


def _change(key: str, before: _Kept | None, after: _Kept | None) -> RowChange:
    row = after if after is not None else before
    assert row is not None
    if before is not None and after is not None and before.state.rated != after.state.rated:
        rated_in = "baseline" if before.state.rated else "current"  # like with like: graded verdicts
        return RowChange(key, row.test, row.prompt, row.provider, before.graded, after.graded, rated_in)
    return RowChange(
        key=key,
        test=row.test,
        prompt=row.prompt,
        provider=row.provider,
        before=before.state if before is not None else None,
        after=after.state if after is not None else None,
    )


def _side(run_id: str, rows: Mapping[str, _Kept]) -> RunSide:
    passed = sum(1 for row in rows.values() if row.state.status == "pass")
    return RunSide(run_id, len(rows), passed)


def compare_reports(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """Compare two JSON reports (stored runs or report files) row by row, and test by test."""
    return compare_rows(
        RunRows(str(baseline.get("evalId") or "?"), baseline["results"]["results"]),
        RunRows(str(current.get("evalId") or "?"), current["results"]["results"]),
        tolerance=tolerance,
        alpha=alpha,
    )


class RunRows(NamedTuple):
    """A run's id and its rows, which may be read one at a time (:meth:`RunStore.iter_rows`)."""

    id: str
    rows: Iterable[Mapping[str, Any]]


def compare_rows(
    baseline: RunRows, current: RunRows, *, tolerance: float = DEFAULT_TOLERANCE, alpha: float = DEFAULT_ALPHA
) -> Comparison:
    """Compare two runs row by row, and their shared tests over their repeats (significance at
    ``alpha``); each run's rows are read once, the baseline's first."""
    judges_before: dict[str, set[str]] = {}
    judges_after: dict[str, set[str]] = {}
    before = _keyed(noting_judges(baseline.rows, judges_before))
    after = _keyed(noting_judges(current.rows, judges_after))
    result = Comparison(_side(baseline.id, before), _side(current.id, after), tolerance)
    unchanged = 0
    for key, row in after.items():
        change = _change(key, before.get(key), row)
        assert change.after is not None
        now_passes = change.after.status == "pass"
        if change.before is None:
            (result.added if now_passes else result.new_failures).append(change)
        elif (change.before.status == "pass") != now_passes:
            (result.fixes if now_passes else result.regressions).append(change)
        elif _moved(change.before, change.after, tolerance):
            result.score_changes.append(change)
        else:
            unchanged += 1
    result.removed.extend(_change(key, row, None) for key, row in before.items() if key not in after)
    statistics = compare_tests(
        (row.test_row() for row in before.values()), (row.test_row() for row in after.values()), alpha=alpha
    )
    changed_judges = tuple(judge_changes(judges_before, judges_after))
    return replace(result, unchanged=unchanged, statistics=statistics, judge_changes=changed_judges)


def _moved(before: RowState, after: RowState, tolerance: float) -> bool:
    if before.score is None or after.score is None or "error" in (before.status, after.status):
        return False
    return abs(after.score - before.score) > tolerance
