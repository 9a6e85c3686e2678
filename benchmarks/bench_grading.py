"""CPU seconds of the grading phase alone: every assertion of every row graded and the rows scored,
as ``evalh run`` grades them, without the config read, the provider calls or the reports; with
``--phase run``, the whole run phase (``run_suite``: provider calls, grading, the rows and the
aggregates, without the cache, the reports or the store).

    python benchmarks/bench_grading.py [--config A_5000.yaml] [--repeats 5] [--phase grade|run]

Without ``--config`` it grades ``bench_vs_promptfoo.py``'s ``det-5000`` suite (written to a temporary
folder). The suite is loaded and planned once; each repeat grades every row against its echoed output
(the rendered prompt) and prints the CPU seconds (user+sys of this process, ``time.process_time``),
then the median and best. Run it at two revisions (``PYTHONPATH=<worktree>``) one after the other: the
machine is shared, so only paired figures compare.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from bench_vs_promptfoo import write_suite  # the scripts run from benchmarks/, which is on sys.path

from evalh.assertions.base import AssertionContext
from evalh.common import gc_policy
from evalh.config.load import load_suite
from evalh.model import AssertionSpec, GradedAssertion, RunOptions, Status, Suite
from evalh.runner.grading import grade_assertion

try:
    from evalh.runner.grading import grade_row
except ImportError:  # a revision before grade_row graded a row one assertion at a time

    async def grade_row(specs: Sequence[AssertionSpec], ctx: AssertionContext) -> tuple[GradedAssertion, ...]:
        return tuple([await grade_assertion(spec, ctx) for spec in specs])


try:  # a run's plans, shared by its rows (each assertion type decided once per run)
    from evalh.runner.grading import GradingPlans

    def _grader() -> Callable[
        [Sequence[AssertionSpec], AssertionContext], Awaitable[tuple[GradedAssertion, ...]]
    ]:
        plans = GradingPlans()
        return lambda specs, ctx: grade_row(specs, ctx, plans)
except ImportError:  # a revision before the plans

    def _grader() -> Callable[
        [Sequence[AssertionSpec], AssertionContext], Awaitable[tuple[GradedAssertion, ...]]
    ]:
        return grade_row


from evalh.runner.execute import run_suite
from evalh.runner.plan import plan_jobs
from evalh.runner.scoring import reasons_shared, score_test


async def grade_all(contexts: list[AssertionContext]) -> dict[Status, int]:
    """Grade every row as the runner does; the count of rows by status (to check two revisions agree)."""
    counts = dict.fromkeys(Status, 0)
    grade = _grader()
    for ctx in contexts:
        graded = await grade(ctx.test.asserts, ctx)
        counts[score_test(graded, ctx.test.threshold).status] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, help="a suite whose provider is echo (default: det-5000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--phase", choices=("grade", "run"), default="grade")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config = args.config or write_suite(Path(folder), "det-5000", "http://127.0.0.1:9/v1")
        suite = load_suite(config)
    if args.phase == "run":
        _run_phase(suite, args.repeats)
        return
    jobs = plan_jobs(suite)
    contexts = [
        AssertionContext(spec=job.test.asserts[0], output=job.rendered_prompt, test=job.test, services=None)  # type: ignore[arg-type]
        for job in jobs
        if job.test.asserts
    ]
    assertions = sum(len(ctx.test.asserts) for ctx in contexts)
    seconds = []
    for _ in range(args.repeats):
        with gc_policy.running(), reasons_shared():  # as run_suite grades
            started = time.process_time()
            counts = asyncio.run(grade_all(contexts))
            seconds.append(time.process_time() - started)
        print(f"{len(contexts)} rows, {assertions} assertions: {seconds[-1]:.3f} s CPU  {counts}")
    print(f"median {statistics.median(seconds):.3f} s, best {min(seconds):.3f} s")


def _run_phase(suite: Suite, repeats: int) -> None:
    """CPU seconds of ``run_suite`` (no cache), repeated; the rows by status."""
    seconds = []
    options = RunOptions(cache=False)
    for _ in range(repeats):
        started = time.process_time()
        record = run_suite(suite, options)
        seconds.append(time.process_time() - started)
        counts = dict.fromkeys(Status, 0)
        for row in record.results:
            counts[row.status] += 1
        print(f"{len(record.results)} rows: {seconds[-1]:.3f} s CPU  {counts}")
    print(f"median {statistics.median(seconds):.3f} s, best {min(seconds):.3f} s")


if __name__ == "__main__":
    main()
