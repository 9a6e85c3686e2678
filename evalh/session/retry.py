"""``--retry-errors``: re-run the rows an earlier run left as ERROR and merge them into its results.

As promptfoo's ``retry`` (it deletes the ERROR results of the eval and resumes it), the rows that ran
are kept, the ERROR cells alone are re-run, and each re-run row takes its ERROR row's place: the merged
results are those of a run where those rows had succeeded (aggregates recomputed from them).

A cell is one test (its description and vars) x prompt x provider x repeat. The merge
(:func:`merge_retried`) is a pure function over rows, whatever they were read from; :func:`rows_from_json`
reads them from a JSON report's ``results.results`` (evalh's, or promptfoo's shape), against the plan
of the config that wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from evalh.errors import ConfigError
from evalh.model import RunRecord, Status, Suite, TestResult
from evalh.reports.codec_read import (
    recorded_status,
    result_from_row,
    row_cell,
    row_description,
    row_own_description,
    row_vars,
)
from evalh.runner.aggregates import compute_aggregates
from evalh.runner.comparing import compares_outputs
from evalh.runner.filters import test_identity
from evalh.runner.plan import Job

__all__ = [
    "CellKey",
    "cell_of_job",
    "error_cells",
    "jobs_to_retry",
    "merge_retried",
    "merged_run",
    "rows_from_json",
]

CellKey = tuple[str, int, int, int]  # test identity, prompt index, provider index, repeat index


def cell_of_job(job: Job) -> CellKey:
    test = job.test
    return (
        test_identity(test.description, dict(test.vars)),
        job.prompt_index,
        job.provider_index,
        job.repeat_index,
    )


def _cell_of_row(row: TestResult) -> CellKey:
    identity = test_identity(row.test.description, dict(row.test.vars))
    return (identity, row.prompt_index, row.provider_index, row.repeat_index)


def _cell_of_json(row: Mapping[str, Any]) -> CellKey:
    cell = row_cell(row)
    return (test_identity(row_description(row), row_vars(row)), cell.prompt, cell.provider, cell.repeat)


def error_cells(rows: Iterable[Mapping[str, Any]]) -> set[CellKey]:
    """The cells of a report's ERROR rows (as their ``failureReason`` records it)."""
    return {_cell_of_json(row) for row in rows if recorded_status(row) is Status.ERROR}


def merge_retried(earlier: Sequence[TestResult], retried: Sequence[TestResult]) -> tuple[TestResult, ...]:
    """``earlier`` with each ERROR row replaced by the re-run row of its cell, in ``earlier``'s order.
    A cell not re-run (the retry was stopped early) keeps its ERROR row; other rows are kept as they
    were, even when a row of the same cell was re-run, except the rows of a test that compares its
    outputs (select-best, max-score): the retry re-ran them all, and they were graded together."""
    by_cell = {_cell_of_row(row): row for row in retried}
    return tuple(
        by_cell.get(_cell_of_row(row), row)
        if row.status is Status.ERROR or compares_outputs(row.test)
        else row
        for row in earlier
    )


def rows_from_json(rows: Sequence[Mapping[str, Any]], jobs: Iterable[Job], *, where: str) -> list[TestResult]:
    """A report's rows as results of the plan ``jobs`` (its tests, prompts and providers). Raises
    ConfigError at ``where`` for a row no job of the plan matches: the report is another config's."""
    by_cell = {cell_of_job(job): job for job in jobs}
    results = []
    for index, row in enumerate(rows):
        job = by_cell.get(_cell_of_json(row))
        if job is None:
            raise ConfigError(
                f"row {index} of the report (test {row_own_description(row) or row_vars(row)!r}) is not "
                "a row of this config, so the re-run rows cannot be merged into it",
                where=where,
                hint="--retry-errors merges into the report this config wrote; run without it to start anew",
            )
        results.append(result_from_row(row, job))
    return results


def jobs_to_retry(plan: Sequence[Job], rows: Iterable[Mapping[str, Any]], kept: Suite) -> list[Job]:
    """The jobs of ``plan`` whose cell errored in ``rows``, among the tests, prompts and providers the
    run's filters ``kept``."""
    cells = error_cells(rows)
    # a test that compares its outputs is graded across its rows: one errored row re-runs its group
    groups = {(cell[0], cell[3]) for cell in cells}
    for job in plan:
        cell = cell_of_job(job)
        if (cell[0], cell[3]) in groups and compares_outputs(job.test):
            cells.add(cell)
    tests, prompts, providers = (
        {id(item) for item in items} for items in (kept.tests, kept.prompts, kept.providers)
    )
    return [
        job
        for job in plan
        if cell_of_job(job) in cells
        and id(job.test) in tests
        and (not kept.prompts or id(job.prompt) in prompts)
        and (not kept.providers or id(job.provider) in providers)
    ]


def merged_run(
    run: RunRecord, earlier: Sequence[TestResult], suite: Suite, *, repeat_pass_rate: float | None = None
) -> RunRecord:
    """The retry's run with its rows merged into ``earlier`` (:func:`merge_retried`) and the aggregates
    recomputed over all of them, as a run of ``suite`` that made them (at the run's
    ``repeat_pass_rate``)."""
    results = merge_retried(earlier, run.results)
    aggregates = compute_aggregates(suite, results, repeat_pass_rate=repeat_pass_rate)
    return replace(run, suite=suite, results=results, aggregates=aggregates)
