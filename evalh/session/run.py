"""A run from config file to reports: load and validate, filter, run, stream, write, summarise.

The CLI's ``run`` is a thin layer over :func:`run_config`; :func:`evaluate` is the same without any
console output, for use from Python.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from evalh.common.notices import strict_mode
from evalh.config.dotenv import environment_overlay
from evalh.config.load import load_suite, load_suite_data
from evalh.config.schema import write_schema
from evalh.errors import ConfigError, ReportError
from evalh.model import EvaluateOptions, RunResult, Suite, TestResult
from evalh.reports.json import new_eval_id, to_promptfoo_json
from evalh.reports.streamed import ConfigEcho, RowSpool
from evalh.reports.table import print_lines, print_summary, progress
from evalh.reports.writers import JsonlStream, check_report_paths, combine_report_errors, write_each_report
from evalh.runner.cache import cache_ttl_s
from evalh.runner.credentials import keyless_providers, missing_keys_error
from evalh.runner.execute import run_suite
from evalh.runner.filters import Filters, apply_filters, filter_by_description, filter_by_report
from evalh.runner.plan import Job, plan_jobs
from evalh.runner.report_file import read_report_file
from evalh.runner.sharding import Shard, select_shard, shard_of_report
from evalh.runner.stopping import CLI_STOP_SIGNALS, DEFAULT_STOP_SIGNALS
from evalh.runtimes.user_filters import user_filters as make_user_filters
from evalh.secrets import redact_config
from evalh.session.context import run_context
from evalh.session.retry import jobs_to_retry, merged_run, rows_from_json
from evalh.store.compare import Comparison, compare_reports
from evalh.store.recording import recording, stored_config_path
from evalh.store.refs import check_baseline, load_baseline
from evalh.templating import user_filters

STARTER_SCHEMA_PLACEHOLDER = "EVALH_SCHEMA_URI"

__all__ = [
    "ConfigSource",
    "RunOutcome",
    "RunSettings",
    "evaluate",
    "load_for_run",
    "plan_for_run",
    "run_config",
    "run_jobs",
    "write_starter",
]

# A config file (several: merged), a mapping of its keys (the Python API: relative paths resolve from the
# current directory), or a Suite already loaded.
ConfigSource = Path | Sequence[Path] | Mapping[str, Any] | Suite


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
    filter_errors_only: Path | None = None
    retry_errors: bool = False  # re-run the ERROR rows of the first .json report path, merged into it
    filters: Filters = field(default_factory=Filters)
    delay_ms: int | None = None
    description: str | None = None
    record: bool = False  # in the run store ($EVALH_HOME); the CLI records unless --no-write
    shard: Shard | None = None  # run only this share of the tests (--shard i/N)


@dataclass(frozen=True)
class _Retry:
    """``--retry-errors``: the report the last run wrote (rewritten with the merged rows), its rows, and
    every test of the config (the rows are rows of its plan)."""

    report: Path
    rows: list[dict[str, Any]]
    suite: Suite


def load_for_run(config_path: Path | Sequence[Path], settings: RunSettings) -> tuple[Suite, list[str]]:
    """The suite to run, its filters applied, and notes on what the filters kept (for the console)."""
    suite, notes, _retry = _load(config_path, settings)
    return suite, notes


def _load(config: ConfigSource, settings: RunSettings) -> tuple[Suite, list[str], _Retry | None]:
    loaded = _loaded(config, settings)
    suite = filter_by_description(loaded, settings.filter_pattern)
    notes: list[str] = []
    if settings.filter_failing is not None:
        suite, note = filter_by_report(suite, settings.filter_failing, errors_only=False)
        notes.append(note)
    errors_report = settings.filter_errors_only or (
        _last_report(suite, settings) if settings.retry_errors else None
    )
    if errors_report is not None:
        flag = "--filter-errors-only" if settings.filter_errors_only else "--retry-errors"
        suite, note = filter_by_report(suite, errors_report, errors_only=True, flag=flag)
        notes.append(note)
    suite, kept = apply_filters(suite, settings.filters)
    notes.extend(kept)
    retry = None
    if settings.retry_errors and errors_report is not None and settings.filter_errors_only is None:
        report = read_report_file(errors_report, where="--retry-errors")
        # a shard's report is retried as that shard: its rows are the shard's, its record is kept
        shard = shard_of_report(report, settings.shard, where=f"--retry-errors {errors_report}")
        whole = replace(_described(loaded, settings.description), shard=shard)
        retry = _Retry(errors_report, report["results"]["results"], whole)
        suite = replace(suite, shard=shard)
    elif settings.shard is not None:
        repeat, sampled = _options(suite, settings).repeat, settings.filters.sample is not None
        suite, note = select_shard(suite, settings.shard, repeat, sampled=sampled)
        notes.append(note)
    return _described(suite, settings.description), notes, retry


def _loaded(config: ConfigSource, settings: RunSettings) -> Suite:
    if isinstance(config, Suite):
        return config
    if isinstance(config, Mapping):
        return load_suite_data(
            config,
            base_dir=Path.cwd(),
            cli_vars=settings.cli_vars,
            grader=settings.grader,
            run_transforms=True,
        )
    return load_suite(config, cli_vars=settings.cli_vars, grader=settings.grader, run_transforms=True)


def _described(suite: Suite, description: str | None) -> Suite:
    if description is None:
        return suite
    # the report's config too, redacted as the rest of it was at load (the store takes it as it is)
    raw = {**suite.raw_config, "description": redact_config(description)}
    return replace(suite, description=description, raw_config=raw)


def _last_report(suite: Suite, settings: RunSettings) -> Path:
    """The JSON report the previous run wrote: the first .json of -o, else of outputPath."""
    for path in (*settings.outputs, *suite.output_paths):
        if str(path).lower().endswith(".json"):
            return Path(path)
    raise ConfigError(
        "--retry-errors re-runs the tests that errored in the last JSON report, and this run names none",
        where="--retry-errors",
        hint="Pass the report the last run wrote (-o results.json), or use --filter-errors-only REPORT.json",
    )


def _options(suite: Suite, settings: RunSettings) -> EvaluateOptions:
    base = suite.evaluate_options
    delay_ms = base.delay_ms if settings.delay_ms is None else settings.delay_ms
    return replace(
        base,
        # promptfoo: a delay between calls means one call at a time
        max_concurrency=1 if delay_ms else settings.max_concurrency or base.max_concurrency,
        repeat=settings.repeat or base.repeat,
        cache=base.cache and settings.cache,
        delay_ms=delay_ms,
    )


def _user_filters(suite: Suite) -> AbstractContextManager[None]:
    """The renders of the run (prompts, rubric prompts, HTTP bodies) see the config's nunjucksFilters."""
    config_dir = Path(suite.config_path).parent if suite.config_path else None
    return user_filters(make_user_filters(suite.nunjucks_filters, config_dir))


def _execute(
    suite: Suite,
    settings: RunSettings,
    *,
    show_progress: bool,
    stop_signals: Sequence[signal.Signals] = DEFAULT_STOP_SIGNALS,
    retry: _Retry | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> tuple[RunResult, ReportError | None, str, Comparison | None]:
    """Run and write every report that can be written; a report that cannot does not stop the run
    nor the other reports: the error naming each one is returned, with the run's ``evalId`` (its id in
    the run store when recorded; every report carries it) and its comparison with ``baseline`` (a JSON
    report), which the Markdown summary shows. With ``retry``, only the errored rows run, merged into
    the earlier rows."""
    options = _options(suite, settings)
    inputs: list[str | Path] = [*suite.input_files]
    # the reports a filter reads are inputs, never overwritten; --retry-errors rewrites the one it read
    inputs.extend(path for path in (settings.filter_failing, settings.filter_errors_only) if path is not None)
    formats = check_report_paths(settings.outputs or suite.output_paths, inputs)  # before any call
    jobs = plan_for_run(retry.suite if retry else suite, settings)  # every prompt checked now
    earlier: list[TestResult] = []
    if retry is not None:  # the earlier rows are read before any call: a mismatch costs nothing
        earlier = rows_from_json(retry.rows, jobs, where=f"--retry-errors {retry.report}")
        jobs, suite = jobs_to_retry(jobs, retry.rows, suite), retry.suite
    # a retry rewrites every report with all the rows, so none is streamed
    streamed = [Path(p) for p, fmt in formats.items() if fmt == "jsonl" and retry is None]
    written = [Path(p) for p in formats if Path(p) not in streamed]
    failures: list[ReportError] = []
    # each row is encoded once as it finishes, when the store or a JSON report takes its text; a retry
    # encodes its rows once merged (a row it spooled as it finished would be spooled again)
    encode = retry is None and (settings.record or any(fmt in ("json", "jsonl") for fmt in formats.values()))
    # the config the store and the JSON report echo: redacted and encoded once for both
    with RowSpool() as spool, ConfigEcho(suite.raw_config, keep="json" in formats.values()) as echo:
        with (
            ExitStack() as stack,
            environment_overlay(suite.env),
            strict_mode(options.strict),
            _user_filters(suite),
        ):
            _check_keys(suite, jobs)  # before any call, file or record: nothing is lost
            cache_ttl_s()  # likewise a bad EVALH_CACHE_TTL (the config's env: may set it)
            streams = [stack.enter_context(JsonlStream(path)) for path in streamed]
            record = stack.enter_context(recording(suite, _now(), enabled=settings.record, echo=echo))
            calls = any(job.uses_provider for job in jobs)
            advance = stack.enter_context(progress(len(jobs) if show_progress else 0, calls=calls))

            def on_result(row: TestResult) -> None:
                if encode:
                    encoded = spool.add(row)
                    for stream in tuple(streams):
                        try:
                            stream.write_text(encoded.text)
                        except ReportError as error:
                            failures.append(error)
                            streams.remove(stream)
                    record.add(encoded)
                advance(1)

            result = run_suite(suite, options, on_result=on_result, stop_signals=stop_signals, jobs=jobs)
            if retry is not None:  # the merged run is the one recorded and reported
                result = merged_run(result, earlier, retry.suite)
                for row in result.results if settings.record else ():
                    record.add(spool.add(row))
            record.finish(result)
        eval_id = record.run_id or new_eval_id(result.started_at)
        comparison = None
        if baseline is not None:
            comparison = compare_reports(baseline, to_promptfoo_json(result, eval_id=eval_id))
        summary = comparison.to_json() if comparison else None
        failures.extend(
            write_each_report(result, written, eval_id=eval_id, comparison=summary, spool=spool, echo=echo)
        )
    return result, combine_report_errors(failures) if failures else None, eval_id, comparison


def _check_keys(suite: Suite, jobs: Sequence[Job]) -> None:
    keyless = keyless_providers(suite, jobs)
    if keyless:
        raise missing_keys_error(keyless, where=suite.config_path or None)


def plan_for_run(suite: Suite, settings: RunSettings) -> list[Job]:
    """Every row the run of ``suite`` makes, in report order; an undefined variable in a prompt is a
    warning, or an error under ``strict``."""
    options = _options(suite, settings)
    with strict_mode(options.strict), _user_filters(suite):
        return plan_jobs(suite, options.repeat)


def run_jobs(suite: Suite, jobs: Sequence[Job], settings: RunSettings) -> RunResult:
    """Run some of :func:`plan_for_run`'s rows (the pytest plugin runs one per item): no report is
    written and nothing is recorded."""
    options = _options(suite, settings)
    with run_context(), environment_overlay(suite.env), strict_mode(options.strict), _user_filters(suite):
        return run_suite(suite, options, jobs=jobs)


def _baseline(ref: str, suite: Suite, *, where: str, gate: bool = False) -> dict[str, Any]:
    """The report ``ref`` names, read before the run starts: ``latest`` is this config's latest run;
    another config's run is warned about, and refused as a guess under a regressions ``gate``."""
    chosen = load_baseline(
        ref, config_path=stored_config_path(suite), description=suite.description, where=where
    )
    check_baseline(chosen, ref, gate=gate)
    return chosen.report


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`evaluate` / :func:`run_config` did: the run, the ``evalId`` its reports carry (its id
    in the run store when recorded), and its comparison with ``--baseline`` (None without one)."""

    result: RunResult
    eval_id: str
    comparison: Comparison | None = None


def evaluate(
    config: ConfigSource, settings: RunSettings | None = None, *, baseline: str | None = None
) -> RunOutcome:
    """Run a config and write its reports, printing nothing; with a ``baseline`` (a stored run or a
    JSON report, read before the run starts), compare the run with it. Raises ReportError, after
    writing every other report, when one cannot be written. Ctrl-C stops the run early
    (``interrupted_by``)."""
    with run_context():  # its environment, secrets and notices apart from any concurrent run's
        return _evaluate(config, settings or RunSettings(), baseline)


def _evaluate(config: ConfigSource, settings: RunSettings, baseline: str | None) -> RunOutcome:
    suite, _notes, retry = _load(config, settings)
    before = _baseline(baseline, suite, where="baseline") if baseline is not None else None
    result, failure, eval_id, comparison = _execute(
        suite, settings, show_progress=False, retry=retry, baseline=before
    )
    if failure is not None:
        raise failure
    return RunOutcome(result, eval_id, comparison)


def run_config(
    config_path: Path | Sequence[Path],
    settings: RunSettings,
    *,
    show_table: bool,
    show_progress: bool,
    verbose: bool,
    note: Callable[[str], None] = lambda text: None,
    cell_limit: int | None = None,
    baseline: str | None = None,
    fail_on_regressions: bool = False,
) -> RunOutcome:
    """The CLI's ``run``: :func:`evaluate` plus a progress bar, notes on what the filters kept, the
    console summary (printed even when a report could not be written, before that error is raised)
    and, with a ``baseline`` (a stored run or a JSON report, read before the run starts), what changed
    since it (a ``latest`` of another config is refused when ``fail_on_regressions`` would rest on it).
    SIGTERM and SIGHUP stop the run like Ctrl-C (``interrupted_by`` names the signal), and
    every report is still written."""
    suite, notes, retry = _load(config_path, settings)
    before = None
    if baseline is not None:
        before = _baseline(baseline, suite, where="--baseline", gate=fail_on_regressions)
    for text in notes:
        note(text)
    result, failure, eval_id, comparison = _execute(
        suite,
        settings,
        show_progress=show_progress,
        stop_signals=CLI_STOP_SIGNALS,
        retry=retry,
        baseline=before,
    )
    print_summary(result, show_table=show_table, verbose=verbose, cell_limit=cell_limit)
    if comparison is not None:
        print_lines(comparison.lines())
    if failure is not None:
        raise failure
    return RunOutcome(result, eval_id, comparison)


def write_starter(directory: Path, *, force: bool = False) -> Path:
    """Write the commented starter config (``evalh init``)."""
    target = directory / "evalh.yaml"
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists", hint="Pass --force to overwrite it")
    text = resources.files("evalh").joinpath("assets/starter.yaml").read_text(encoding="utf-8")
    directory.mkdir(parents=True, exist_ok=True)
    # editors (yaml-language-server) complete from the full schema of this evalh, written beside it
    schema = write_schema(directory / "evalh.schema.json")
    target.write_text(text.replace(STARTER_SCHEMA_PLACEHOLDER, schema.name, 1), encoding="utf-8")
    return target
