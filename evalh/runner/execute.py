"""Run a suite: outputs (providers or recorded), bulk embeddings, then grading, in asyncio.

Each job gets its output under its provider's semaphore. A job whose assertions embed nothing is graded
at once (so judge calls overlap with output calls); the others wait until every output is in, then the
texts all of them will embed are embedded in one deduplicated, batched pass, and they are graded.
Rows are kept in plan order. A stop signal (Ctrl-C; SIGTERM and SIGHUP from the CLI, see
:mod:`evalh.runner.stopping`) cancels the run at once and keeps every row finished so far; the rows not
finished are counted as not run, never written as failures.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from evalh.assertions.base import AssertionContext, EmbedRequest
from evalh.common import gc_policy
from evalh.errors import TemplateError
from evalh.model import (
    NO_USAGE,
    AssertionSpec,
    GradedAssertion,
    ProviderResponse,
    ProviderUsage,
    RowTrace,
    RunOptions,
    RunRecord,
    Status,
    Suite,
    TestCase,
    TestResult,
    TraceContext,
    Usage,
    script_var_names,
)
from evalh.providers.base import CallContext
from evalh.runner.aggregates import compute_aggregates
from evalh.runner.cache import Cache, cache_mode
from evalh.runner.comparing import compare_rows, compares_outputs, per_row_asserts
from evalh.runner.grading import GradingPlans, collect_prefetch, grade_row
from evalh.runner.plan import Job, plan_jobs, render_job_prompt
from evalh.runner.scoring import TestVerdict, reasons_shared, score_test
from evalh.runner.scoring_function import scored_by_function
from evalh.runner.sequence import RunMemory, runs_in_sequence
from evalh.runner.services import ProviderPool, RunServices
from evalh.runner.stopping import DEFAULT_STOP_SIGNALS, run_until_stopped
from evalh.runner.traces import RunTracing, run_tracing
from evalh.runner.transforming import Transformed, transform_response
from evalh.runtimes.extension_hooks import HookFailed, before_each
from evalh.runtimes.prompt_functions import PromptFunctionFailed, call_prompt_function, prompt_timeout_s
from evalh.runtimes.var_scripts import VarScriptFailed, run_var_scripts
from evalh.templating import template_env
from evalh.tracing.collector import CollectedTrace

__all__ = ["ResultCallback", "run_suite"]

ResultCallback = Callable[[TestResult], None]

_T = TypeVar("_T")

# Rows in flight at once, at least (see _Execution.in_flight).
_MIN_IN_FLIGHT = 1024

# The context of a job is built once and re-targeted at each assertion by grading.
_NO_SPEC = AssertionSpec(type="")

# What stops the run rather than failing a row: everything else user code raises, even SystemExit
# or another BaseException, fails only the row it was raised for.
_STOPS_THE_RUN = (KeyboardInterrupt, asyncio.CancelledError)


def _raised(what: str, error: BaseException) -> str:
    detail = f": {error}" if str(error) else ""
    return f"{what} raised {type(error).__name__}{detail} (user code must not exit or interrupt the run)"


# uuid.uuid4()'s version (4) and variant (RFC 4122) bits, set in 16 random bytes as it sets them
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def _row_id() -> str:
    """A row's id: ``uuid.uuid4().hex`` (the same bits and spelling) without the UUID object built and
    checked for every row."""
    return f"{int.from_bytes(os.urandom(16)) & _UUID4_CLEAR | _UUID4_SET:032x}"


class _Collector:
    """Finished rows by job index, so an interrupted run still reports what it finished.

    Once a stop signal arrived, rows are refused: work cancelled by the stop may still unwind into a
    row (user code or a runtime that turned the cancellation into an error), and such a row was
    abandoned, not run, so it is counted as not run rather than written as an ERROR.

    A row of a test that compares its outputs (select-best, max-score) is held until the cross-row
    phase has graded it (:meth:`release`): it is written once, with its final verdict, and a run stopped
    before then counts it as not run."""

    def __init__(self, on_result: ResultCallback | None) -> None:
        self.rows: dict[int, TestResult] = {}
        self.held: list[tuple[Job, TestResult]] = []
        self.on_result = on_result
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def add(self, job: Job, row: TestResult, compared: bool) -> None:
        """Keep ``row``, or hold it when its test ``compared`` its outputs (:func:`compares_outputs`)."""
        if self.stopped:
            return
        if compared:
            self.held.append((job, row))
            return
        self.keep(job, row)

    def keep(self, job: Job, row: TestResult) -> None:
        self.rows[job.index] = row
        if self.on_result is not None:
            self.on_result(row)

    def release(self, graded: Sequence[tuple[Job, TestResult]]) -> None:
        """Keep the held rows, graded by the cross-row phase."""
        self.held = []
        for job, row in graded:
            if self.stopped:
                return
            self.keep(job, row)

    def ordered(self) -> tuple[TestResult, ...]:
        return tuple(self.rows[index] for index in sorted(self.rows))


@dataclass(frozen=True)
class _Output:
    job: Job
    response: ProviderResponse
    context: AssertionContext
    trace: CollectedTrace | None = None  # the row's trace, when the run traces and the row called a provider


def _usage_of(graded: Sequence[GradedAssertion]) -> Usage:
    total = NO_USAGE
    for item in graded:
        if item.usage is not None:
            total = total + item.usage
        if item.children:
            total = total + _usage_of(item.children)
    return total


def _row(
    job: Job,
    response: ProviderResponse,
    graded: tuple[GradedAssertion, ...],
    trace: RowTrace | None = None,
    verdict: TestVerdict | None = None,
) -> TestResult:
    # positional, in TestResult's field order: a keyword dict less for each row
    error: str | None
    if response.error is not None:
        status, score, reason, error = Status.ERROR, 0.0, response.error, response.error
        named: Mapping[str, float] = {}
        weights: Mapping[str, float] = {}
        grading_usage = NO_USAGE
    else:
        verdict = verdict or score_test(graded, job.test.threshold)
        status, score, reason = verdict.status, verdict.score, verdict.reason
        error = verdict.reason if verdict.status is not Status.PASS else None
        named, weights = verdict.named_scores, verdict.named_score_weights
        grading_usage = _usage_of(graded)
    return TestResult.of_run(
        job.test,
        job.prompt,
        job.provider,
        job.prompt_index,
        job.provider_index,
        job.rendered_prompt,
        status,
        score,
        reason,
        response.output,
        error,
        response.latency_ms,
        response.cached,
        response.cost,
        response.usage,
        grading_usage,
        graded if response.error is None else (),
        named,
        weights,
        job.repeat_index,
        _row_id(),
        trace,
    )


def _as_written(job: Job, written: TestCase) -> Job:
    """The row's job with its var scripts' references back in its vars, as promptfoo reports them (the
    values were what the prompt and the assertions saw)."""
    if job.test is written:  # its var scripts (if any) did not run: its vars are as written
        return job
    names = script_var_names(written.vars)
    if not names:
        return job
    variables = {**job.test.vars, **{name: written.vars[name] for name in names}}
    return replace(job, test=replace(job.test, vars=variables))


class _Execution:
    def __init__(
        self, suite: Suite, options: RunOptions, collector: _Collector, tracing: RunTracing | None = None
    ) -> None:
        self.suite = suite
        self.collector = collector
        self.tracing = tracing
        self.config_dir = Path(suite.config_path).parent if suite.config_path else None
        timeout_s = options.timeout_ms / 1000 if options.timeout_ms else None
        # storeOutputAs / _conversation: rows read earlier rows, so they run one at a time, in order
        self.memory = RunMemory(template_env(suite.env)) if runs_in_sequence(suite) else None
        self.cache_mode = cache_mode(options)
        self.cache = Cache.open(self.cache_mode)
        self.pool = ProviderPool(str(self.config_dir or ""), options.max_concurrency)
        self.services = RunServices(
            self.pool, self.cache, default_choice=suite.default_provider, timeout_s=timeout_s
        )
        self.timeout_s = timeout_s
        self.delay_s = options.delay_ms / 1000
        self.plans = GradingPlans()  # each assertion type decided once for the run
        # no row's assertions compare outputs or prefetch embeddings (decided in run): no row asks
        self.rows_alone = False

    async def with_prompt(self, job: Job) -> Job:
        """``job`` with its prompt function's prompt (raises PromptFunctionFailed; TemplateError for a
        prompt whose template cannot render, as promptfoo errors that prompt's rows)."""
        if job.prompt.unusable:
            raise TemplateError(job.prompt.unusable)
        if not job.prompt.function:
            return job
        context = {
            "vars": dict(job.test.vars),
            "provider": {"id": job.provider.shown_id, "label": job.provider.label},
            "config": dict(job.prompt.config),
        }
        result = await call_prompt_function(
            job.prompt.function,
            context,
            config_dir=self.config_dir,
            timeout_s=prompt_timeout_s(job.prompt.function, job.prompt.config, self.timeout_s),
        )
        if not result.config:
            return replace(job, rendered_prompt=result.prompt)
        merged = replace(job.prompt, config={**job.prompt.config, **result.config})
        return replace(job, rendered_prompt=result.prompt, prompt=merged)

    async def with_before_each(self, job: Job) -> Job:
        """``job`` with the test its beforeEach hooks return (raises HookFailed), its prompt rendered
        again when they changed it."""
        if not self.suite.extensions:
            return job
        test = await before_each(
            self.suite.extensions, job.test, config_dir=self.config_dir, timeout_s=self.timeout_s
        )
        if test is job.test:
            return job
        return replace(
            job, test=test, rendered_prompt=render_job_prompt(job, test, template_env(self.suite.env))
        )

    async def with_var_scripts(self, job: Job) -> Job:
        """``job`` with its var scripts' values in its vars and its prompt rendered again with them
        (raises VarScriptFailed, TemplateError). The values are data: inserted, never rendered."""
        if not script_var_names(job.test.vars):
            return job
        variables = await run_var_scripts(
            job.test.vars,
            job.prompt.raw,
            {"id": job.provider.id, "label": job.provider.label},
            config_dir=self.config_dir,
            timeout_s=self.timeout_s,
        )
        test = replace(job.test, vars=variables)
        return replace(
            job, test=test, rendered_prompt=render_job_prompt(job, test, template_env(self.suite.env))
        )

    async def output_of(self, job: Job, trace: TraceContext | None = None) -> Transformed:
        """The row's output: the provider's (or the recorded) answer, transformed; remembered for
        later rows when the run goes in sequence."""
        response = await self.provider_output(job, trace)
        transformed = await transform_response(
            job.test, job.provider, job.rendered_prompt, response, self.config_dir, self.timeout_s
        )
        if self.memory is not None:
            self.memory.record(job, response, transformed.response)
        return transformed

    async def provider_output(self, job: Job, trace: TraceContext | None = None) -> ProviderResponse:
        if not job.uses_provider:
            return ProviderResponse(output=job.test.output)
        context = CallContext(
            vars=job.test.vars,
            test=job.test,
            prompt_label=job.prompt.label,
            timeout_s=self.timeout_s,
            trace=trace,
        )
        started_ns = time.time_ns()
        if job.test.stand_in is not None:  # a test's provider: it drives the provider under test
            response = await self.services.stand_in(
                job.test.stand_in, job.provider, job.rendered_prompt, context, job.prompt.config
            )
        else:
            response = await self.services.call_provider(
                job.provider, job.rendered_prompt, context, job.prompt.config
            )
        if trace is not None and self.tracing is not None:
            self.tracing.record_call(job, self.pool, trace, response, started_ns)
        if self.delay_s and not response.cached:  # --delay: promptfoo waits after each real call
            await asyncio.sleep(self.delay_s)
        if response.error is None and response.output is None:
            return response.replaced(error=f"{job.provider.display} returned no output")
        return response

    def context_of(
        self, job: Job, response: ProviderResponse, provider_output: Any, trace: CollectedTrace | None = None
    ) -> AssertionContext:
        return AssertionContext(
            spec=_NO_SPEC,
            output=response.output,
            provider_output=provider_output,
            test=job.test,
            services=self.services,
            prompt=job.rendered_prompt,
            latency_ms=None if response.cached else response.latency_ms,
            cached=response.cached,
            cost=response.cost,
            config_dir=self.config_dir,
            provider_metadata=response.metadata,
            provider_spec=job.provider,
            suite_tests=self.suite.tests,
            timeout_s=self.timeout_s,
            trace=trace,
        )

    def finished_context(self, job: Job, row: TestResult) -> AssertionContext:
        """The assertion context of a finished row (for the cross-row phase's grader)."""
        response = ProviderResponse(output=row.output, cached=row.cached, cost=row.cost)
        return self.context_of(job, response, row.output)

    async def grade(self, item: _Output) -> None:
        graded: tuple[GradedAssertion, ...] = ()
        response = item.response
        # once per row, unless the run knows none does
        compared = not self.rows_alone and compares_outputs(item.job.test, self.plans)
        if response.error is None:
            try:
                specs = per_row_asserts(item.job.test, compared, self.plans)
                graded = await grade_row(specs, item.context, self.plans)
            except _STOPS_THE_RUN:
                raise
            except BaseException as error:  # SystemExit & co. from an assertion's code
                response = response.replaced(error=_raised("grading", error))
        verdict = None
        if item.job.test.scoring_function is not None and response.error is None:
            verdict = await scored_by_function(
                item.job.test,
                graded,
                score_test(graded, item.job.test.threshold),
                _usage_of(graded),
                config_dir=self.config_dir,
                timeout_s=self.timeout_s,
            )
        row_trace = None
        if item.trace is not None and self.tracing is not None:
            row_trace = await self.tracing.finish(item.trace)
        self.collector.add(item.job, _row(item.job, response, graded, row_trace, verdict), compared)

    async def first_pass(self, job: Job, deferred: list[tuple[_Output, list[EmbedRequest]]]) -> None:
        if self.collector.stopped:  # a worker whose code swallowed the stop takes no new job
            return
        trace: TraceContext | None = None
        written = job.test
        try:
            # each step awaited only when it has work (most rows have none): a coroutine less for each
            if self.suite.extensions:
                job = await self.with_before_each(job)
                written = job.test
            if self.memory is not None:
                job = self.memory.prepare(job)
            if script_var_names(job.test.vars):
                job = await self.with_var_scripts(job)
            if job.prompt.unusable or job.prompt.function:
                job = await self.with_prompt(job)
            if self.tracing is not None and job.uses_provider:
                trace = self.tracing.issue()
            transformed = await self.output_of(job, trace)
            if self.memory is not None:
                job = self.memory.with_own_turn(job)
        except TemplateError as error:  # a late var or the prompt, rendered with earlier rows' outputs
            transformed = Transformed(ProviderResponse(error=error.render()), None)
        except (VarScriptFailed, HookFailed) as error:
            transformed = Transformed(ProviderResponse(error=str(error)), None)
        except PromptFunctionFailed as error:
            kind = "Prompt function" if job.prompt.function.startswith("file://") else "Prompt"
            error_text = f"{kind} {job.prompt.function} failed: {error}"
            transformed = Transformed(ProviderResponse(error=error_text), None)
        except _STOPS_THE_RUN:
            raise
        except BaseException as error:  # SystemExit & co. from a provider's code
            transformed = Transformed(ProviderResponse(error=_raised(job.provider.display, error)), None)
        response = transformed.response
        source = self.tracing.source(trace) if self.tracing is not None and trace is not None else None
        context = self.context_of(job, response, transformed.provider_output, source)
        item = _Output(_as_written(job, written), response, context, source)
        requests = (
            collect_prefetch(job.test.asserts, item.context, self.plans)
            if response.error is None and not self.rows_alone
            else []
        )
        if requests:
            deferred.append((item, requests))
        else:
            await self.grade(item)

    def in_flight(self) -> int:
        """Rows worked on at once: enough to keep every provider's (and grader's) semaphore full, as
        each row waits for one call at a time; bounded, so 50,000 rows are not 50,000 tasks at once."""
        return max(_MIN_IN_FLIGHT, 2 * self.pool.max_concurrency * max(1, len(self.suite.providers)))

    async def run(self, jobs: Sequence[Job]) -> None:
        deferred: list[tuple[_Output, list[EmbedRequest]]] = []
        # beforeEach hooks may give a row other assertions: then each row is asked
        self.rows_alone = not self.suite.extensions and not self.plans.any_across_rows(
            job.test.asserts for job in jobs
        )
        try:
            if self.memory is None:
                await _each(jobs, lambda job: self.first_pass(job, deferred), self.in_flight())
            else:
                for job in jobs:
                    await self.first_pass(job, deferred)
            if deferred:
                await self.services.embeddings.prefetch([r for _, requests in deferred for r in requests])
                deferred.sort(key=lambda pair: pair[0].job.index)
                await _each([item for item, _ in deferred], self.grade, self.in_flight())
            if self.collector.held:
                self.collector.release(await compare_rows(self.collector.held, self.finished_context))
        finally:
            await self.pool.aclose()
            self.cache.close()


async def _each(items: Sequence[_T], work: Callable[[_T], Awaitable[None]], in_flight: int) -> None:
    """``work`` on every item, started in order, at most ``in_flight`` at a time."""
    pending = iter(items)

    async def worker() -> None:
        for item in pending:
            await work(item)

    await asyncio.gather(*(worker() for _ in range(min(in_flight, len(items)))))


def run_suite(
    suite: Suite,
    options: RunOptions | None = None,
    *,
    on_result: ResultCallback | None = None,
    stop_signals: Sequence[signal.Signals] = DEFAULT_STOP_SIGNALS,
    jobs: Sequence[Job] | None = None,
) -> RunRecord:
    """Run every job of ``suite``; ``on_result`` sees each row as it finishes (for jsonl, progress).
    ``jobs`` is the plan when the caller made it already (:func:`plan_jobs`, for a progress total).

    One of ``stop_signals`` (Ctrl-C by default) stops the run early: the result holds the rows finished
    so far and names the signal in ``interrupted_by``."""
    options = options or suite.evaluate_options
    jobs = plan_jobs(suite, options.repeat) if jobs is None else jobs
    collector = _Collector(on_result)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    tracing_where = " ".join(filter(None, (suite.config_path, "tracing")))
    with run_tracing(suite.tracing, tracing_where) as tracing, gc_policy.running(), reasons_shared():
        execution = _Execution(suite, options, collector, tracing)
        stopped_by = run_until_stopped(execution.run(jobs), stop_signals, collector.stop)
        results = collector.ordered()
        # under the run's collector policy: its every-700-allocations passes would scan every row
        aggregates = compute_aggregates(suite, results, repeat_pass_rate=options.repeat_pass_rate)
    usage = execution.services.usage_by_provider()
    return RunRecord(
        suite=suite,
        results=results,
        started_at=started_at,
        duration_ms=(time.perf_counter() - started) * 1000,
        provider_usage=tuple(ProviderUsage(provider=k, usage=v) for k, v in sorted(usage.items())),
        interrupted=stopped_by is not None,
        interrupted_by=stopped_by,
        not_run=len(jobs) - len(results),
        aggregates=aggregates,
        cache_mode=execution.cache_mode,
    )
