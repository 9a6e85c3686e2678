"""A run from config file to reports: load and validate, filter, run, stream, write, summarise.

The CLI's ``run`` is a thin layer over :func:`run_config`; :func:`evaluate` is the same without any
console output, for use from Python.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from evalh.config.load import load_suite
from evalh.config.schema import schema_path
from evalh.errors import ConfigError, ConfigFileError, ReportError
from evalh.model import EvaluateOptions, RunResult, Suite, TestResult
from evalh.notices import strict_mode
from evalh.reports.table import print_summary, progress
from evalh.reports.writers import JsonlStream, check_report_paths, combine_report_errors, write_each_report
from evalh.runner.execute import run_suite
from evalh.runner.plan import plan_jobs
from evalh.runner.stopping import CLI_STOP_SIGNALS, DEFAULT_STOP_SIGNALS

STARTER_SCHEMA_PLACEHOLDER = "EVALH_SCHEMA_URI"

__all__ = ["RunSettings", "evaluate", "filter_failing", "load_for_run", "run_config", "write_starter"]


@dataclass(frozen=True)
class RunSettings:
    """What the command line adds to a config (CLI flags win over ``evaluateOptions``)."""

    outputs: tuple[str, ...] = ()
    max_concurrency: int | None = None
    filter_pattern: str | None = None
    filter_failing: Path | None = None
    cli_vars: Mapping[str, str] = field(default_factory=dict)
    repeat: int | None = None
    cache: bool = True
    grader: str | None = None


def _test_identity(description: Any, variables: Any) -> str:
    return json.dumps({"d": description or None, "v": variables or {}}, sort_keys=True, default=str)


def _failing_identities(report: Path) -> tuple[set[str], int]:
    """The (description, vars) identities of a report's failed or errored rows, and its row count."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        rows = data["results"]["results"]
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise TypeError("results.results is not a list of result objects")
        failing = {
            _test_identity(
                row.get("description") or (row.get("testCase") or {}).get("description"), row.get("vars")
            )
            for row in rows
            if not row.get("success", False)
        }
    except FileNotFoundError:
        raise ConfigFileError(f"report not found: {report}", where="--filter-failing") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(
            f"{report} is not an evalh or promptfoo JSON report ({type(error).__name__}: {error})",
            where="--filter-failing",
            hint="Pass a file written with -o results.json",
        ) from None
    return failing, len(rows)


def filter_failing(suite: Suite, report: Path) -> tuple[Suite, str]:
    """Keep the tests that failed or errored in an earlier JSON report (matched by description + vars),
    with a line saying how many matched. Raises ConfigError when none does: nothing would run."""
    failing, total = _failing_identities(report)
    kept = tuple(test for test in suite.tests if _test_identity(test.description, dict(test.vars)) in failing)
    counts = f"{len(failing)} failed or errored test(s) among its {total} rows"
    if not failing:
        raise ConfigError(
            f"{report}: none of its {total} rows failed or errored, so there is nothing to re-run",
            where="--filter-failing",
            hint="Run without --filter-failing to run every test",
        )
    if not kept:
        raise ConfigError(
            f"{report}: {counts}, and none of them is among this config's {len(suite.tests)} tests",
            where="--filter-failing",
            hint="Tests are matched by description and vars: pass a report this config wrote",
        )
    return replace(suite, tests=kept), f"--filter-failing {report}: {counts}; re-running {len(kept)} test(s)"


def load_for_run(config_path: Path, settings: RunSettings) -> tuple[Suite, list[str]]:
    """The suite to run, its filters applied, and notes on what the filters kept (for the console)."""
    suite = load_suite(
        config_path,
        cli_vars=settings.cli_vars,
        grader=settings.grader,
        filter_pattern=settings.filter_pattern,
    )
    notes: list[str] = []
    if settings.filter_failing is not None:
        suite, note = filter_failing(suite, settings.filter_failing)
        notes.append(note)
    return suite, notes


def _options(suite: Suite, settings: RunSettings) -> EvaluateOptions:
    base = suite.evaluate_options
    return replace(
        base,
        max_concurrency=settings.max_concurrency or base.max_concurrency,
        repeat=settings.repeat or base.repeat,
        cache=base.cache and settings.cache,
    )


@contextmanager
def _environment(overrides: Mapping[str, str]) -> Iterator[None]:
    """The config's ``env:`` map is visible to providers during the run only."""
    saved = {key: os.environ.get(key) for key in overrides}
    os.environ.update({key: str(value) for key, value in overrides.items()})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _execute(
    suite: Suite,
    settings: RunSettings,
    *,
    show_progress: bool,
    stop_signals: Sequence[signal.Signals] = DEFAULT_STOP_SIGNALS,
) -> tuple[RunResult, ReportError | None]:
    """Run and write every report that can be written; a report that cannot does not stop the run
    nor the other reports: the error naming each one is returned."""
    options = _options(suite, settings)
    inputs: list[str | Path] = [*suite.input_files]
    if settings.filter_failing is not None:
        inputs.append(settings.filter_failing)
    formats = check_report_paths(settings.outputs or suite.output_paths, inputs)  # before any call
    with strict_mode(options.strict):  # an undefined variable in a prompt: a warning, or an error
        jobs = plan_jobs(suite, options.repeat)  # its size and every prompt checked before a report opens
    streamed = [Path(p) for p, fmt in formats.items() if fmt == "jsonl"]
    written = [p for p, fmt in formats.items() if fmt != "jsonl"]
    failures: list[ReportError] = []
    with ExitStack() as stack, _environment(suite.env), strict_mode(options.strict):
        streams = [stack.enter_context(JsonlStream(path)) for path in streamed]
        advance = stack.enter_context(progress(len(jobs) if show_progress else 0))

        def on_result(row: TestResult) -> None:
            for stream in tuple(streams):
                try:
                    stream.write(row)
                except ReportError as error:
                    failures.append(error)
                    streams.remove(stream)
            advance(1)

        result = run_suite(suite, options, on_result=on_result, stop_signals=stop_signals, jobs=jobs)
    failures.extend(write_each_report(result, written))
    return result, combine_report_errors(failures) if failures else None


def evaluate(config_path: Path, settings: RunSettings | None = None) -> RunResult:
    """Run a config and write its reports, printing nothing. Raises ReportError, after writing every
    other report, when one cannot be written. Ctrl-C stops the run early (``interrupted_by``)."""
    settings = settings or RunSettings()
    suite, _notes = load_for_run(config_path, settings)
    result, failure = _execute(suite, settings, show_progress=False)
    if failure is not None:
        raise failure
    return result


def run_config(
    config_path: Path,
    settings: RunSettings,
    *,
    show_table: bool,
    show_progress: bool,
    verbose: bool,
    note: Callable[[str], None] = lambda text: None,
) -> RunResult:
    """The CLI's ``run``: :func:`evaluate` plus a progress bar, notes on what the filters kept, and the
    console summary (printed even when a report could not be written, before that error is raised).
    SIGTERM and SIGHUP stop the run like Ctrl-C (``interrupted_by`` names the signal), and every report
    is still written."""
    suite, notes = load_for_run(config_path, settings)
    for text in notes:
        note(text)
    result, failure = _execute(suite, settings, show_progress=show_progress, stop_signals=CLI_STOP_SIGNALS)
    print_summary(result, show_table=show_table, verbose=verbose)
    if failure is not None:
        raise failure
    return result


def write_starter(directory: Path, *, force: bool = False) -> Path:
    """Write the commented starter config (``evalh init``)."""
    target = directory / "evalh.yaml"
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists", hint="Pass --force to overwrite it")
    text = resources.files("evalh").joinpath("assets/starter.yaml").read_text(encoding="utf-8")
    # point editors (yaml-language-server) at the schema this evalh ships, for completion offline
    text = text.replace(STARTER_SCHEMA_PLACEHOLDER, schema_path().resolve().as_uri(), 1)
    directory.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
