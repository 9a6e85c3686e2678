"""The cross-row phase: select-best and max-score, graded once every row of a test is in.

promptfoo leaves these assertions out of each row's grading; after the last row of the run, it grades
each test's first ``select-best`` (all tests), then its first ``max-score``, over the outputs of the
test's rows in column order (provider, then prompt), and merges each verdict into every row: the row
passes only if it passed and the comparison passed; a lost comparison sets the row's score to 0 and,
for select-best always, for max-score when the row was passing, its reason. A row's named scores stay
as they were. Rows of one test and one repeat form a group (a repeat is its own comparison, as in
promptfoo, where each repeat is its own test index); a shard holds all rows of its tests.

The execution holds these rows back until the phase is done, so a streamed row is written once, with
its final verdict; a run stopped before then counts them as not run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from evalh.assertions.base import AssertionContext
from evalh.model import AssertionResult, AssertionSpec, GradedAssertion, Status, TestCase, TestResult
from evalh.model.thresholds import meets
from evalh.runner.grading import GradingPlans
from evalh.runner.plan import Job
from evalh.runner.scoring import finalize

if TYPE_CHECKING:  # the comparison family is imported by the first test that compares its outputs
    from evalh.assertions.comparison import MaxScoreOptions, RowScore

__all__ = ["ContextOf", "compare_rows", "compares_outputs", "per_row_asserts"]

# The assertion context of a finished row (its job and row), as the per-row pass built it.
ContextOf = Callable[[Job, TestResult], AssertionContext]
Held = tuple[Job, TestResult]


def compares_outputs(test: TestCase, plans: GradingPlans | None = None) -> bool:
    """Whether ``test`` has an assertion the cross-row phase grades (``plans``: the run's, else its own)."""
    plans = GradingPlans() if plans is None else plans
    by_type = plans.by_type  # read directly: every row asks (see grade_row)
    return any([(by_type.get(spec.type) or plans.of(spec)).compares for spec in test.asserts])


def per_row_asserts(
    test: TestCase, compared: bool, plans: GradingPlans | None = None
) -> tuple[AssertionSpec, ...]:
    """``test``'s assertions graded row by row: all but the comparisons (most tests have none: their
    own tuple, not a copy per row). ``compared``: :func:`compares_outputs` of ``test``."""
    if not compared:
        return test.asserts
    plans = GradingPlans() if plans is None else plans
    return tuple(spec for spec in test.asserts if not plans.of(spec).compares)


async def compare_rows(held: Sequence[Held], context_of: ContextOf) -> list[Held]:
    """Every held row with its comparisons graded and merged, in the order given."""
    groups: dict[tuple[int, int], list[Held]] = defaultdict(list)
    for job, row in sorted(held, key=lambda pair: pair[0].index):
        groups[id(job.test), job.repeat_index].append((job, row))
    done: dict[int, TestResult] = {}
    for group in groups.values():
        for (job, _), row in zip(group, await _compare_group(group, context_of), strict=True):
            done[job.index] = row
    return [(job, done[job.index]) for job, _ in held]


async def _compare_group(group: Sequence[Held], context_of: ContextOf) -> list[TestResult]:
    from evalh.assertions.comparison import max_score_options

    test = group[0][0].test
    rows = [row for _, row in group]
    select = next((s for s in test.asserts if s.base_type == "select-best"), None)
    if select is not None:
        results = await _select_best(select, group, context_of)
        merged = zip(rows, results, strict=True)
        rows = [_merged(row, finalize(select, result), always=True) for row, result in merged]
    most = next((s for s in test.asserts if s.base_type == "max-score"), None)
    if most is not None:
        results = _too_few(most, len(rows)) or _max_score(max_score_options(most.value), rows)
        merged = zip(rows, results, strict=True)
        rows = [_merged(row, finalize(most, result), always=False) for row, result in merged]
    return rows


async def _select_best(
    spec: AssertionSpec, group: Sequence[Held], context_of: ContextOf
) -> list[AssertionResult]:
    """promptfoo's verdicts on the grader's pick: the picked row passes, the others fail; no usable
    index fails every row."""
    too_few = _too_few(spec, len(group))
    if too_few:
        return too_few
    from evalh.assertions.comparison import pick_best

    job, first = group[0]
    ctx = context_of(job, first).for_assertion(spec, None)
    # a row without an output (a provider error) is compared as an empty text, as in promptfoo
    pick = await pick_best(ctx, ["" if row.output is None else row.output for _, row in group])
    if isinstance(pick, AssertionResult):  # the grader could not answer: an ERROR on every row
        return [pick] * len(group)
    if pick.index is None or pick.index >= len(group):
        reason = f"Invalid select-best verdict: {'NaN' if pick.index is None else pick.index}"
        return [AssertionResult(False, 0.0, reason, details=pick.details, usage=pick.usage)] * len(group)
    return [
        AssertionResult(
            index == pick.index,
            1.0 if index == pick.index else 0.0,
            f"Output {'selected as the best' if index == pick.index else 'not selected'}: {spec.value}",
            details=pick.details,
            usage=pick.usage if index == 0 else None,  # the grader's usage counts once, on one row
        )
        for index in range(len(group))
    ]


def _max_score(options: MaxScoreOptions, rows: Sequence[TestResult]) -> list[AssertionResult]:
    """promptfoo's max-score verdicts: the first row of the highest score wins, unless that score is
    below the threshold; a row with no graded output (an ERROR) cannot win."""
    from evalh.assertions.comparison import row_score

    scored = [None if _no_output(row) else row_score(row.assertions, options) for row in rows]
    best = max((s.score for s in scored if s is not None), default=None)
    winner = next((i for i, s in enumerate(scored) if s is not None and s.score == best), None)
    reached = best is not None and (options.threshold is None or meets(best, options.threshold, "higher"))
    return [
        _max_score_result(figure, index == winner and reached, best, reached, options)
        for index, figure in enumerate(scored)
    ]


def _max_score_result(
    figure: RowScore | None, wins: bool, best: float | None, reached: bool, options: MaxScoreOptions
) -> AssertionResult:
    if figure is None or best is None:
        return AssertionResult(False, 0.0, "Not selected: the row has no graded output")
    if wins:
        reason = f"Selected as highest scoring output (score: {figure.score:.3f})"
    elif figure.score == best and not reached:
        shown = _js_number(options.threshold or 0.0)
        reason = f"Not selected - score {figure.score:.3f} below threshold {shown}"
    else:
        reason = f"Not selected (score: {figure.score:.3f}, max: {best:.3f})"
    details = {"maxScore": figure.score, "assertionCount": figure.assertions, "totalWeight": figure.weight}
    return AssertionResult(wins, 1.0 if wins else 0.0, reason, details=details, value=figure.score)


def _js_number(value: float) -> str:
    """A number as JavaScript prints it in a template string (1, 0.9)."""
    return str(int(value)) if value.is_integer() else repr(value)


def _too_few(spec: AssertionSpec, outputs: int) -> list[AssertionResult]:
    """An ERROR for each row of a test with nothing to compare (promptfoo stops the whole run)."""
    from evalh.assertions.comparison import MIN_OUTPUTS

    if outputs >= MIN_OUTPUTS:
        return []
    reason = (
        f"{spec.type} compares a test's outputs across prompts and providers, but this test has "
        f"{outputs}: give it another prompt or provider, or remove {spec.type}"
    )
    return [AssertionResult.failure(reason)] * outputs


def _no_output(row: TestResult) -> bool:
    """A row max-score cannot score: an ERROR with no graded assertion (its provider failed)."""
    return row.status is Status.ERROR and not row.assertions


def _merged(row: TestResult, graded: GradedAssertion, *, always: bool) -> TestResult:
    """``row`` with a comparison's verdict merged as promptfoo merges it (``always``: a lost comparison
    names the row's reason even when the row had failed already; select-best does, max-score does not)."""
    assertions = (*row.assertions, graded)
    usage = row.grading_usage if graded.usage is None else row.grading_usage + graded.usage
    if row.status is Status.ERROR:
        return replace(row, assertions=assertions, grading_usage=usage)
    if graded.error:
        reason = f"{graded.spec.type}: {graded.reason}"
        return replace(
            row, status=Status.ERROR, score=0.0, reason=reason, error=reason,
            assertions=assertions, grading_usage=usage,
        )  # fmt: skip
    if graded.passed:
        return replace(row, assertions=assertions, grading_usage=usage)
    reason = f"{graded.spec.type}: {graded.reason}" if always or row.passed else row.reason
    return replace(
        row, status=Status.FAIL, score=graded.score, reason=reason, error=reason,
        assertions=assertions, grading_usage=usage,
    )  # fmt: skip
