"""A run from config file to reports: load and validate, filter, run, stream, write, summarise.

The CLI's ``run`` is a thin layer over :func:`run_config`; :func:`run_quietly` is the same without any
console output, for use from Python.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.common.notices import strict_mode, warn
from evalh.config.dotenv import environment_overlay
from evalh.config.load import load_suite, load_suite_data
from evalh.config.schema import write_schema
from evalh.errors import ConfigError, ReportError
from evalh.model import RunOptions, RunRecord, Suite, TestResult
from evalh.model.verdict import run_passed
from evalh.reports.codec_check import read_report_file
from evalh.reports.console import echo as echo_line
from evalh.reports.json import new_eval_id, to_promptfoo_json
from evalh.reports.streamed import ConfigEcho, RowSpool
from evalh.reports.table import print_lines, print_summary, progress
from evalh.reports.writers import JsonlStream, check_report_paths, combine_report_errors, write_each_report
from evalh.runner.cache import cache_ttl_s
from evalh.runner.credentials import keyless_providers, missing_keys_error
from evalh.runner.execute import run_suite
from evalh.runner.filters import apply_filters, filter_by_description
from evalh.runner.plan import Job, plan_jobs
from evalh.runner.sharding import select_shard, shard_of_report
from evalh.runner.stopping import CLI_STOP_SIGNALS, DEFAULT_STOP_SIGNALS
from evalh.runtimes.user_filters import user_filters as make_user_filters
from evalh.secrets import RedactedConfig, redact_config
from evalh.session.context import run_context
from evalh.session.filters import filter_by_report
from evalh.session.hooks import tell_hooks_of_run
from evalh.session.retry import jobs_to_retry, merged_run, rows_from_json
from evalh.store.recording import recording, stored_config_path
from evalh.templating import user_filters

if TYPE_CHECKING:  # the comparison machinery loads only for a run with --baseline
    from evalh.store.compare import Comparison

STARTER_SCHEMA_PLACEHOLDER = "EVALH_SCHEMA_URI"

__all__ = [
    "ConfigSource",
    "RunOutcome",
    "load_for_run",
    "plan_for_run",
    "run_config",
    "run_jobs",
    "run_quietly",
    "write_starter",
]

# A config file (several: merged), a mapping of its keys (the Python API: relative paths resolve from the
# current directory), or a Suite already loaded.
ConfigSource = Path | Sequence[Path] | Mapping[str, Any] | Suite


@dataclass(frozen=True)
class _Retry:
    """``--retry-errors``: the report the last run wrote (rewritten with the merged rows), its rows, and
    every test of the config (the rows are rows of its plan)."""

    report: Path
    rows: list[dict[str, Any]]
    suite: Suite


def load_for_run(config_path: Path | Sequence[Path], options: RunOptions) -> tuple[Suite, list[str]]:
    """The suite to run, its filters applied, and notes on what the filters kept (for the console)."""
    suite, notes, _retry = _load(config_path, options)
    return suite, notes


def _load(config: ConfigSource, options: RunOptions) -> tuple[Suite, list[str], _Retry | None]:
    loaded = _loaded(config, options)
    suite = filter_by_description(loaded, options.filter_pattern)
    notes: list[str] = []
    if options.filter_failing is not None:
        suite, note = filter_by_report(suite, options.filter_failing, errors_only=False)
        notes.append(note)
    errors_report = options.filter_errors_only or (
        _last_report(suite, options) if options.retry_errors else None
    )
    if errors_report is not None:
        flag = "--filter-errors-only" if options.filter_errors_only else "--retry-errors"
        suite, note = filter_by_report(suite, errors_report, errors_only=True, flag=flag)
        notes.append(note)
    suite, kept = apply_filters(suite, options.filters)
    notes.extend(kept)
    retry = None
    if options.retry_errors and errors_report is not None and options.filter_errors_only is None:
        report = read_report_file(errors_report, where="--retry-errors")
        # a shard's report is retried as that shard: its rows are the shard's, its record is kept
        shard = shard_of_report(report, options.shard, where=f"--retry-errors {errors_report}")
        whole = replace(_described(loaded, options.description), shard=shard)
        retry = _Retry(errors_report, report["results"]["results"], whole)
        suite = replace(suite, shard=shard)
    elif options.shard is not None:
        repeat, sampled = _options(suite, options).repeat, options.filters.sample is not None
        suite, note = select_shard(suite, options.shard, repeat, sampled=sampled)
        notes.append(note)
    return _described(suite, options.description), notes, retry


def _loaded(config: ConfigSource, options: RunOptions) -> Suite:
    if isinstance(config, Suite):
        return config
    if isinstance(config, Mapping):
        return load_suite_data(
            config,
            base_dir=Path.cwd(),
            cli_vars=options.vars,
            grader=options.grader,
            run_transforms=True,
        )
    return load_suite(config, cli_vars=options.vars, grader=options.grader, run_transforms=True)


def _described(suite: Suite, description: str | None) -> Suite:
    if description is None:
        return suite
    # the report's config too, redacted as the rest of it was at load (the store takes it as it is)
    raw = {**suite.raw_config, "description": redact_config(description)}
    if isinstance(suite.raw_config, RedactedConfig):
        raw = RedactedConfig(raw)
    return replace(suite, description=description, raw_config=raw)


def _last_report(suite: Suite, options: RunOptions) -> Path:
    """The JSON report the previous run wrote: the first .json of -o, else of outputPath."""
    for path in (*options.outputs, *suite.output_paths):
        if str(path).lower().endswith(".json"):
            return Path(path)
    raise ConfigError(
        "--retry-errors re-runs the tests that errored in the last JSON report, and this run names none",
        where="--retry-errors",
        hint="Pass the report the last run wrote (-o results.json), or use --filter-errors-only REPORT.json",
    )


def _options(suite: Suite, options: RunOptions) -> RunOptions:
    """What the run uses: ``options`` (flags, keywords) over the config's ``evaluateOptions``."""
    return options.over(suite.evaluate_options)


def _user_filters(suite: Suite) -> AbstractContextManager[None]:
    """The renders of the run (prompts, rubric prompts, HTTP bodies) see the config's nunjucksFilters."""
    config_dir = Path(suite.config_path).parent if suite.config_path else None
    return user_filters(make_user_filters(suite.nunjucks_filters, config_dir))


def _execute(
    suite: Suite,
    options: RunOptions,
    *,
    show_progress: bool,
    stop_signals: Sequence[signal.Signals] = DEFAULT_STOP_SIGNALS,
    retry: _Retry | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> tuple[RunRecord, ReportError | None, str, Comparison | None]:
    """Run and write every report that can be written; a report that cannot does not stop the run
    nor the other reports: the error naming each one is returned, with the run's ``evalId`` (its id in
    the run store when recorded; every report carries it) and its comparison with ``baseline`` (a JSON
    report), which the Markdown summary shows. With ``retry``, only the errored rows run, merged into
    the earlier rows."""
    options = _options(suite, options)
    inputs: list[str | Path] = [*suite.input_files]
    # the reports a filter reads are inputs, never overwritten; --retry-errors rewrites the one it read
    inputs.extend(path for path in (options.filter_failing, options.filter_errors_only) if path is not None)
    formats = check_report_paths(options.outputs or suite.output_paths, inputs)  # before any call
    jobs = plan_for_run(retry.suite if retry else suite, options)  # every prompt checked now
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
    encode = retry is None and (options.record or any(fmt in ("json", "jsonl") for fmt in formats.values()))
    # the config the store and the JSON report echo: encoded once for both; when the load redacted it
    # (a RedactedConfig), only the secrets registered since are replaced, in its text
    keep = "json" in formats.values()
    with RowSpool() as spool, ConfigEcho(suite.raw_config, keep=keep) as echo:
        with (
            ExitStack() as stack,
            environment_overlay(suite.env),
            strict_mode(options.strict),
            _user_filters(suite),
        ):
            _check_keys(suite, jobs)  # before any call, file or record: nothing is lost
            cache_ttl_s()  # likewise a bad EVALH_CACHE_TTL (the config's env: may set it)
            streams = [stack.enter_context(JsonlStream(path)) for path in streamed]
            record = stack.enter_context(recording(suite, _now(), enabled=options.record, echo=echo))
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
                result = merged_run(result, earlier, retry.suite, repeat_pass_rate=options.repeat_pass_rate)
                for row in result.results if options.record else ():
                    record.add(spool.add(row))
            record.finish(result)
        eval_id = record.run_id or new_eval_id(result.started_at)
        tell_hooks_of_run(
            result, eval_id, options.timeout_ms
        )  # afterEach and afterAll, before the reports are written
        comparison = None
        if baseline is not None:
            from evalh.store.compare import compare_reports

            current = to_promptfoo_json(result, eval_id=eval_id)
            comparison = compare_reports(baseline, current, alpha=options.alpha)
        summary = comparison.to_json() if comparison else None
        failures.extend(
            write_each_report(result, written, eval_id=eval_id, comparison=summary, spool=spool, echo=echo)
        )
    return result, combine_report_errors(failures) if failures else None, eval_id, comparison


def _check_keys(suite: Suite, jobs: Sequence[Job]) -> None:
    """A provider without its key: one warning (its rows are ERRORs, as in promptfoo); --strict stops."""
    keyless = keyless_providers(suite, jobs)
    if keyless:
        where = suite.config_path or "the suite"
        warn(
            missing_keys_error(keyless, where=suite.config_path or None), where=where, subject="missing keys"
        )


def plan_for_run(suite: Suite, options: RunOptions) -> list[Job]:
    """Every row the run of ``suite`` makes, in report order; an undefined variable in a prompt is a
    warning, or an error under ``strict``."""
    options = _options(suite, options)
    with strict_mode(options.strict), _user_filters(suite):
        return plan_jobs(suite, options.repeat)


def run_jobs(suite: Suite, jobs: Sequence[Job], options: RunOptions) -> RunRecord:
    """Run some of :func:`plan_for_run`'s rows (the pytest plugin runs one per item): no report is
    written and nothing is recorded."""
    options = _options(suite, options)
    with run_context(), environment_overlay(suite.env), strict_mode(options.strict), _user_filters(suite):
        return run_suite(suite, options, jobs=jobs)


def _baseline(ref: str, suite: Suite, *, where: str, gate: bool = False) -> dict[str, Any]:
    """The report ``ref`` names, read before the run starts: ``latest`` is this config's latest run;
    another config's run is warned about, and refused as a guess under a regressions ``gate``."""
    from evalh.store.refs import check_baseline, load_baseline

    chosen = load_baseline(
        ref, config_path=stored_config_path(suite), description=suite.description, where=where
    )
    check_baseline(chosen, ref, gate=gate)
    return chosen.report


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run_quietly` / :func:`run_config` did: the run, the ``evalId`` its reports carry (its id
    in the run store when recorded), and its comparison with ``--baseline`` (None without one)."""

    result: RunRecord
    eval_id: str
    comparison: Comparison | None = None

    def passed(self, options: RunOptions) -> bool:
        """The run's verdict under ``options``' ``--fail-under`` / ``--fail-on regressions`` (exit 0 or 1)."""
        regressed = None
        if options.fail_on_regressions and self.comparison is not None:
            regressed = bool(self.comparison.failed)
        return run_passed(self.result, fail_under=options.fail_under, regressed=regressed)


def run_quietly(config: ConfigSource, options: RunOptions | None = None) -> RunOutcome:
    """Run a config and write its reports, printing nothing; with a ``baseline`` option (a stored run or
    a JSON report, read before the run starts), compare the run with it. Raises ReportError, after
    writing every other report, when one cannot be written. Ctrl-C stops the run early
    (``interrupted_by``)."""
    with run_context():  # its environment, secrets and notices apart from any concurrent run's
        return _run_quietly(config, options or RunOptions())


def _run_quietly(config: ConfigSource, options: RunOptions) -> RunOutcome:
    suite, _notes, retry = _load(config, options)
    before = None if options.baseline is None else _baseline(options.baseline, suite, where="baseline")
    result, failure, eval_id, comparison = _execute(
        suite, options, show_progress=False, retry=retry, baseline=before
    )
    if failure is not None:
        raise failure
    return RunOutcome(result, eval_id, comparison)


def run_config(
    config_path: Path | Sequence[Path],
    options: RunOptions,
    *,
    show_table: bool,
    show_progress: bool,
    verbose: bool,
    note: Callable[[str], None] = lambda text: None,
    cell_limit: int | None = None,
) -> RunOutcome:
    """The CLI's ``run``: :func:`run_quietly` plus a progress bar, notes on what the filters kept, the
    console summary (printed even when a report could not be written, before that error is raised)
    and, with a ``baseline`` option (a stored run or a JSON report, read before the run starts), what
    changed since it (a ``latest`` of another config is refused when ``fail_on_regressions`` would rest
    on it).
    SIGTERM and SIGHUP stop the run like Ctrl-C (``interrupted_by`` names the signal), and
    every report is still written."""
    suite, notes, retry = _load(config_path, options)
    before = None
    if options.baseline is not None:
        gate = options.fail_on_regressions
        before = _baseline(options.baseline, suite, where="--baseline", gate=gate)
    for text in notes:
        note(text)
    result, failure, eval_id, comparison = _execute(
        suite,
        options,
        show_progress=show_progress,
        stop_signals=CLI_STOP_SIGNALS,
        retry=retry,
        baseline=before,
    )
    print_summary(result, show_table=show_table, verbose=verbose, cell_limit=cell_limit)
    if comparison is not None:
        print_lines(comparison.lines())
        for line in comparison.judge_changes:
            echo_line(line, err=True)  # stderr, as evalh diff gives it
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
