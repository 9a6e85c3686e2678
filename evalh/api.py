"""evalh from Python: :func:`evaluate` / :func:`aevaluate` a config, :func:`check` one output.

The same run as ``evalh run`` (load and validate, filter, run, write the reports named in
``outputs``), printing nothing. A config is a path, a mapping of the YAML's keys (validated the same
way, its problems located by key path; relative paths resolve from the current directory) or a
:class:`~evalh.model.Suite`. Problems raise the :mod:`evalh.errors` tree.

:func:`evaluate` works inside a running event loop (Jupyter, an async test): the run then has its own
loop in a worker thread, which is also how :func:`aevaluate` runs it. Ctrl-C stops a run with its
rows kept (``interrupted``) only when the run has the main thread: signals reach no other thread.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

from evalh.assertions.registry import base_type, get_assertion
from evalh.common.limits import RUN_OPTION_BOUNDS
from evalh.config.locate import close_matches
from evalh.errors import ConfigError
from evalh.model import (
    Aggregates,
    CacheShare,
    GradedAssertion,
    RepeatSummary,
    RunOptions,
    RunRecord,
    Status,
    Suite,
    TestResult,
)
from evalh.model.verdict import run_passed
from evalh.providers.registry import find_entry
from evalh.reports.json import to_promptfoo_json
from evalh.reports.markdown import to_markdown
from evalh.runtimes.callables import callables_active, take_callables
from evalh.secrets import redact_text
from evalh.session.run import ConfigSource, run_quietly
from evalh.store.compare import Comparison

__all__ = [
    "CheckFailed",
    "Comparison",
    "Options",
    "RunResult",
    "aevaluate",
    "check",
    "evaluate",
    "failure_text",
]

_CHECK_EXAMPLE = '[{"type": "contains", "value": "Paris"}]'
_OUTPUT_LIMIT = 500  # characters of an output shown in a failure's report


@dataclass(frozen=True, repr=False)  # the generated repr printed every row: 100 KB for 50 tests
class RunResult:
    """A finished run: its rows (one per test x prompt x provider x repeat, in plan order), their
    assertions' results, the run's figures, and :meth:`to_dict` in the JSON report's shape."""

    run: RunRecord  # the record every report is written from
    eval_id: str = ""  # the ``evalId`` of the run's reports: its id in the run store when recorded
    comparison: Comparison | None = None  # with the ``baseline`` option: what changed since that run

    def __repr__(self) -> str:
        eval_id = f"eval_id={self.eval_id!r}, " if self.eval_id else ""
        return f"RunResult({eval_id}{self.run.summary()})"

    @property
    def rows(self) -> tuple[TestResult, ...]:
        """Every finished row; ``row.assertions`` holds each assertion's graded result."""
        return self.run.results

    @property
    def ok(self) -> bool:
        """True when every planned row ran and passed (what ``evalh run`` exits 0 for); with repeats,
        when every test reached ``repeat_pass_rate`` over its repeats."""
        return run_passed(self.run)

    @property
    def successes(self) -> int:
        return self.run.count(Status.PASS)

    @property
    def failures(self) -> int:
        return self.run.count(Status.FAIL)

    @property
    def errors(self) -> int:
        return self.run.count(Status.ERROR)

    @property
    def pass_rate(self) -> float:
        """Percentage of rows that passed (errors count against it); 100.0 for an empty run."""
        return self.run.pass_rate

    @property
    def pass_rate_interval(self) -> tuple[float, float]:
        """A 95% interval of the suite's pass rate (fractions 0-1), each test counted once."""
        return self.run.aggregates.pass_rate_interval

    @property
    def repeats(self) -> RepeatSummary | None:
        """With ``repeat`` above 1: each test's pass rate over its repeats with its interval, pass^N,
        pass@N, ``flaky``, mean score and verdict (``tests``); else None."""
        return self.run.aggregates.repeats

    @property
    def interrupted(self) -> bool:
        """Stopped early (Ctrl-C): ``rows`` holds the rows finished before the stop."""
        return self.run.interrupted

    @property
    def cache_share(self) -> CacheShare:
        """How many outputs came from the cache (``from_cache`` of ``outputs``; ``mode``)."""
        return self.run.cache_share

    @property
    def cache_summary(self) -> str | None:
        """ "19 of 19 outputs from the cache; cache=False calls the providers" (None when no provider
        was asked for an output): cached outputs predate any change of the app since they were cached."""
        return self.run.cache_share.sentence(flag="cache=False")

    @property
    def aggregates(self) -> Aggregates:
        """Per prompt x provider columns, per assertion type and named-score figures."""
        return self.run.aggregates

    def assertion_results(self) -> list[tuple[TestResult, GradedAssertion]]:
        """Every top-level assertion's result with its row, in row order."""
        return [(row, graded) for row in self.rows for graded in row.assertions]

    def stats(self) -> dict[str, Any]:
        """The report's ``results.stats``: successes, failures, errors, token usage, duration."""
        stats: dict[str, Any] = self.to_dict()["results"]["stats"]
        return stats

    def to_dict(self) -> dict[str, Any]:
        """The whole run as the JSON report (``-o results.json``) holds it, secrets redacted."""
        return to_promptfoo_json(self.run, eval_id=self.eval_id or None)

    def to_markdown(self) -> str:
        """The Markdown summary ``-o summary.md`` writes (with the ``baseline`` comparison, if any),
        e.g. for ``IPython.display.Markdown`` in a notebook; secret values redacted."""
        comparison = self.comparison.to_json() if self.comparison else None
        return redact_text(to_markdown(self.run, eval_id=self.eval_id or None, comparison=comparison))


class CheckFailed(AssertionError):
    """:func:`check`'s output failed an assertion (an ``AssertionError``, so pytest shows it as a
    failure); ``row`` holds every assertion's result."""

    def __init__(self, row: TestResult) -> None:
        self.row = row
        super().__init__(failure_text(row))


def failure_text(row: TestResult) -> str:
    """A row's verdict, each assertion's result and the output: a failure's readable report, with the
    run's secret values redacted (it goes to pytest's output and its --junitxml file)."""
    lines = [f"{row.status.value}: {row.reason}"]
    for graded in row.assertions:
        mark = (
            "ERROR" if graded.error else "SKIPPED" if graded.skipped else "PASS" if graded.passed else "FAIL"
        )
        lines.append(f"  [{mark}] {graded.spec.type} (score {graded.score:.3g}): {graded.reason}")
    if row.error and row.status is Status.ERROR:
        lines.append(f"error: {row.error}")
    output = row.output if isinstance(row.output, str) else repr(row.output)
    shown = output if len(output) <= _OUTPUT_LIMIT else output[:_OUTPUT_LIMIT] + "…"
    lines.append(f"output: {shown}")
    return redact_text("\n".join(lines))


class Options(TypedDict, total=False):
    """:func:`evaluate`'s options: ``evalh run``'s flags."""

    max_concurrency: int  # --max-concurrency
    filter_pattern: str  # --filter-pattern: a regular expression on test descriptions
    vars: Mapping[str, str]  # --var: data, never rendered as a template
    repeat: int  # --repeat
    repeat_pass_rate: float  # --repeat-pass-rate: the share of its repeats a test must pass (0-1)
    cache: bool  # False: --no-cache
    grader: str  # --grader
    outputs: Sequence[str | Path]  # -o: the reports to write
    write: bool  # record the run in the run store (a library call records nothing by default)
    baseline: str  # --baseline: a stored run (an id, latest, latest~N) or a JSON report to compare with


# The keywords named otherwise than the RunOptions field they fill.
_FIELD_OF_KEYWORD = {"write": "record"}


def _run_options(options: Options) -> RunOptions:
    """:func:`evaluate`'s keywords as the run's options (a keyword not given keeps the config's value)."""
    _check_options(options)
    values: dict[str, Any] = {_FIELD_OF_KEYWORD.get(name, name): value for name, value in options.items()}
    if "outputs" in values:
        values["outputs"] = tuple(str(path) for path in values["outputs"])
    if "vars" in values:
        values["vars"] = dict(values["vars"])
    return RunOptions.given_as(**values)


def _check_options(options: Mapping[str, Any]) -> None:
    """Refuse an option evaluate() does not have (a typo would be ignored) or a number outside the
    bounds of its ``evalh run`` flag, before anything is loaded."""
    known = list(Options.__annotations__)
    for name, value in options.items():
        if name not in known:
            match = close_matches(name, known)
            hint = f"Did you mean {match}?" if match else f"The options are {', '.join(known)}"
            raise ConfigError(f"evaluate() has no option {name!r}", hint=hint)
        bound = RUN_OPTION_BOUNDS.get(name)
        problem = bound.problem(value) if bound else None
        if bound and problem:
            hint = f"The bounds are those of evalh run's {bound.flag}"
            raise ConfigError(f"{name} {problem}", where=f"evaluate({name}=...)", hint=hint)


def _run(config: str | ConfigSource, options: RunOptions) -> RunResult:
    source: ConfigSource = Path(config) if isinstance(config, str) else config
    table: Mapping[str, Callable[..., Any]] = {}
    if isinstance(source, Mapping):  # Python callables as providers, assertions, transforms
        source, table = take_callables(source, reserved=_names_a_provider)
    elif isinstance(source, Suite):
        table = source.callables
    with callables_active(table):
        outcome = run_quietly(source, options)
    run = outcome.result
    if table and not run.suite.callables:  # the suite remembers them, so that it can run again
        run = replace(run, suite=replace(run.suite, callables=dict(table)))
    return RunResult(run, outcome.eval_id, outcome.comparison)


def _names_a_provider(name: str) -> bool:
    """``name`` is a built-in provider's id (or matches its prefix): a callable may not take it."""
    return find_entry(name) is not None


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def evaluate(config: str | ConfigSource, **options: Unpack[Options]) -> RunResult:
    """Run ``config`` and write the reports named in ``outputs`` (or its ``outputPath``). The options
    are ``evalh run``'s flags (:class:`Options`); ``write=True`` records the run in the run store as
    ``evalh run`` does. Raises :class:`~evalh.errors.ConfigError` for a bad config before any provider
    call, and :class:`~evalh.errors.ReportError` (after writing every other report) when a report
    cannot be written."""
    run_options = _run_options(options)
    if not _loop_running():
        return _run(config, run_options)
    # The caller's loop is busy running us: the run's own loop needs a thread of its own.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalh-evaluate") as pool:
        # the caller's context (its warnings policy, environment) goes along: a pool does not carry it
        return pool.submit(contextvars.copy_context().run, _run, config, run_options).result()


async def aevaluate(config: str | ConfigSource, **options: Unpack[Options]) -> RunResult:
    """:func:`evaluate` for async code: the run goes on in a worker thread with its own loop, so the
    caller's loop stays free meanwhile."""
    return await asyncio.to_thread(_run, config, _run_options(options))


def check(
    output: Any,
    assertions: Sequence[Mapping[str, Any] | Callable[..., Any]],
    *,
    vars: Mapping[str, Any] | None = None,
    grader: str | None = None,
) -> TestResult:
    """Grade one recorded ``output`` with ``assertions`` (a test's ``assert:`` list, checked as the
    config's is) and return the row; raise :class:`CheckFailed`, an ``AssertionError`` listing each
    assertion's result, when it does not pass. For evals written as test functions; a function in
    ``assertions`` is a ``python`` assertion (``fn(output, context)``)."""
    if isinstance(assertions, str):
        raise _bare_type(assertions, "check(output, assertions)")
    for index, spec in enumerate(assertions):
        if isinstance(spec, str):
            raise _bare_type(spec, f"check(output, assertions): assertions[{index}]")
    asserts = [spec if callable(spec) else dict(spec) for spec in assertions]
    test: dict[str, Any] = {"output": output, "assert": asserts}
    if vars:
        test["vars"] = dict(vars)
    options: Options = {"grader": grader} if grader else {}
    result = evaluate({"tests": [test]}, **options)
    row = result.rows[0]
    if row.status is not Status.PASS:
        raise CheckFailed(row)
    return row


def _bare_type(written: str, where: str) -> ConfigError:
    """A type name where an assertion (a mapping) belongs: say what to write instead, with the value
    the type needs (``check("x", "contains")`` would otherwise fail on the letters of the name)."""
    definition = get_assertion(base_type(written)[0])
    if definition is None:
        message, example = f"an assertion is a mapping, not the text {written!r}", _CHECK_EXAMPLE
    elif definition.requires_value:
        message = f"{written} needs a value, but only its type name {written!r} was given"
        example = f'[{{"type": "{written}", "value": ...}}]'
    else:
        message, example = (
            f"an assertion is a mapping, not the type name {written!r}",
            f'[{{"type": "{written}"}}]',
        )
    hint = f"Pass a list of assertions written as a test's assert: list is: check(output, {example})"
    return ConfigError(message, where=where, hint=hint)
