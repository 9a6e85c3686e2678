"""``evalh run`` (and ``evalh eval``, promptfoo's name for it): flags -> run options -> the session's run
-> exit code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalh.cli import diff
from evalh.cli.output import echo, note
from evalh.cli.params import (
    AlphaOption,
    ConfigArg,
    ConfigOption,
    EnvFileOption,
    FailUnderOption,
    StrictOption,
    config_paths,
    parse_vars,
)
from evalh.common.limits import RUN_OPTION_BOUNDS
from evalh.errors import EXIT_FAILED, EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED

if TYPE_CHECKING:  # the model loads when a run starts (evalh --help stays fast)
    from evalh.model import RunOptions

__all__ = ["EVAL_HELP", "SIGNAL_EXIT", "run"]

EVAL_HELP = "The same as run (promptfoo's name for it): every flag of run works here."
SIGNAL_EXIT = {"SIGHUP": EXIT_HANGUP, "SIGINT": EXIT_INTERRUPTED, "SIGTERM": EXIT_TERMINATED}
_CONCURRENCY, _REPEAT = RUN_OPTION_BOUNDS["max_concurrency"], RUN_OPTION_BOUNDS["repeat"]
_REPEAT_PASS_RATE = RUN_OPTION_BOUNDS["repeat_pass_rate"]


def run(
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    output: Annotated[
        list[str] | None,
        typer.Option(
            "--output",
            "-o",
            help="Write a report: .json .jsonl .xml/.junit.xml .csv .yaml .html .txt .md (several: -o "
            "a.json b.xml).",
        ),
    ] = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option(
            "--max-concurrency",
            "-j",
            min=_CONCURRENCY.low,
            max=_CONCURRENCY.high,
            help="Parallel calls per provider [4].",
        ),
    ] = None,
    filter_pattern: Annotated[
        str | None, typer.Option("--filter-pattern", help="Only tests whose description matches this regex.")
    ] = None,
    filter_failing: Annotated[
        Path | None,
        typer.Option("--filter-failing", help="Only tests that failed or errored in this JSON report."),
    ] = None,
    filter_errors_only: Annotated[
        Path | None,
        typer.Option("--filter-errors-only", help="Only tests that errored in this JSON report."),
    ] = None,
    retry_errors: Annotated[
        bool,
        typer.Option(
            "--retry-errors",
            help="Re-run only the rows that errored in the last run's JSON report (the first .json of "
            "-o or outputPath) and rewrite the reports with them merged into its rows.",
        ),
    ] = False,
    filter_first_n: Annotated[
        int | None, typer.Option("--filter-first-n", "-n", min=1, help="Only the first N tests.")
    ] = None,
    filter_sample: Annotated[
        int | None, typer.Option("--filter-sample", min=1, help="Only N tests chosen at random.")
    ] = None,
    filter_metadata: Annotated[
        list[str] | None,
        typer.Option(
            "--filter-metadata",
            help="Only tests whose metadata KEY contains VALUE: key=value (repeatable, all must match).",
        ),
    ] = None,
    filter_providers: Annotated[
        str | None,
        typer.Option(
            "--filter-providers",
            "--filter-targets",
            help="Only providers whose id or label matches this regex.",
        ),
    ] = None,
    filter_prompts: Annotated[
        str | None,
        typer.Option("--filter-prompts", help="Only prompts whose label or path matches this regex."),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run only the I-th of N shares of the tests (1-based, e.g. 2/3), chosen by test "
            "identity; `evalh merge` joins the shards' JSON reports (docs/ci.md).",
        ),
    ] = None,
    delay: Annotated[
        int | None,
        typer.Option(
            "--delay",
            min=0,
            help="Wait MS milliseconds after each provider call not served from the cache (runs one call "
            "at a time).",
        ),
    ] = None,
    env_file: EnvFileOption = None,
    description: Annotated[
        str | None,
        typer.Option("--description", help="The run's description in reports (instead of the config's)."),
    ] = None,
    table_cell_max_length: Annotated[
        int | None,
        typer.Option(
            "--table-cell-max-length",
            min=1,
            help="Cut the results table's outputs and vars at N characters (reasons at 2N) [what fits "
            "the terminal; 250 when piped].",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="After the run, compare it with this run: a run id, latest, latest~N (this config's "
            "runs, read before this run is recorded) or a JSON report; prints regressions, fixes, score "
            "changes, added and removed tests.",
        ),
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            help="failures: exit 1 when any test fails or errors (the default); regressions: exit 1 only "
            "for new failures since --baseline (tests that passed there, and new tests that fail; with "
            "repeats in both runs, tests significantly worse over their repeats), so known failures do not "
            "fail CI.",
        ),
    ] = "failures",
    no_write: Annotated[
        bool,
        typer.Option(
            "--no-write",
            help="Do not record this run in the run store ($EVALH_HOME/runs.sqlite3, default "
            "~/.evalh): `evalh runs`, `evalh diff` and `evalh view` will not see it.",
        ),
    ] = False,
    var: Annotated[
        list[str] | None, typer.Option("--var", help="Set a variable for every test: key=value.")
    ] = None,
    repeat: Annotated[
        int | None,
        typer.Option("--repeat", min=_REPEAT.low, max=_REPEAT.high, help="Run every test N times."),
    ] = None,
    repeat_pass_rate: Annotated[
        float | None,
        typer.Option(
            "--repeat-pass-rate",
            min=_REPEAT_PASS_RATE.low,
            max=_REPEAT_PASS_RATE.high,
            metavar="R",
            help="With --repeat: a test passes when at least this share of its repeats passed, and the "
            "exit code and --fail-under count tests by that verdict [1.0: every repeat].",
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Call every provider instead of reading the cache, and write their answers to it.",
        ),
    ] = False,
    fail_under: FailUnderOption = None,
    alpha: AlphaOption = None,
    grader: Annotated[
        str | None, typer.Option("--grader", help="Provider id of the grader for model-graded assertions.")
    ] = None,
    no_table: Annotated[
        bool, typer.Option("--no-table", help="Print the summary without the results table.")
    ] = False,
    no_progress: Annotated[
        bool, typer.Option("--no-progress-bar", help="Do not show a progress bar.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every row and tracebacks.")] = False,
    strict: StrictOption = False,
) -> None:
    """Run a suite: check the config, get outputs, grade them, print and write the results.

    Exit codes: 0 all passed; 1 a test failed or errored (or the pass rate is under --fail-under;
    with --repeat, a test passed fewer than --repeat-pass-rate of its repeats; with --fail-on
    regressions: a new failure since --baseline); 2 invalid config or usage, a provider
    in use without its API key (before any call), a filter that selects no test, or a --baseline that
    names no run or report; 130 Ctrl-C, 143 SIGTERM, 129
    SIGHUP (the results finished so far are still written to every report, marked interrupted).
    """
    from evalh.config.dotenv import dotenv_environment
    from evalh.model import Filters, RunOptions
    from evalh.runner.filters import parse_metadata_filters
    from evalh.runner.sharding import parse_shard
    from evalh.session.context import run_context

    with run_context(), dotenv_environment(env_file or []):
        diff.check_fail_on(fail_on, baseline, fail_under)
        options = RunOptions.given_as(
            outputs=tuple(output or ()),
            max_concurrency=max_concurrency,
            repeat=repeat,
            repeat_pass_rate=repeat_pass_rate,
            cache=not no_cache,
            delay_ms=delay,
            grader=grader,
            vars=parse_vars(var or []),
            filter_pattern=filter_pattern,
            filter_failing=filter_failing,
            filter_errors_only=filter_errors_only,
            retry_errors=retry_errors,
            filters=Filters(
                metadata=parse_metadata_filters(filter_metadata or []),
                first_n=filter_first_n,
                sample=filter_sample,
                prompts=filter_prompts,
                providers=filter_providers,
            ),
            shard=None if shard is None else parse_shard(shard),
            description=description,
            record=not no_write,
            baseline=baseline,
            fail_under=fail_under,
            fail_on_regressions=fail_on == "regressions",
            alpha=alpha,
        )
        code = _run(
            config_paths(config, config_option),
            options,
            show_table=not no_table,
            show_progress=not no_progress,
            verbose=verbose,
            cell_limit=table_cell_max_length,
        )
    raise typer.Exit(code)


def _run(
    config_path: list[Path],
    options: RunOptions,
    *,
    show_table: bool,
    show_progress: bool,
    verbose: bool,
    cell_limit: int | None,
) -> int:
    from evalh.session.run import run_config

    outcome = run_config(
        config_path,
        options,
        show_table=show_table,
        show_progress=show_progress,
        verbose=verbose,
        cell_limit=cell_limit,
        note=note,
    )
    run_result = outcome.result
    if run_result.interrupted:
        signal_name = run_result.interrupted_by or "SIGINT"
        echo(
            f"evalh: interrupted by {signal_name}: {len(run_result.results)} finished row(s) written, "
            f"{run_result.not_run} not run",
            err=True,
        )
        return SIGNAL_EXIT.get(signal_name, EXIT_INTERRUPTED)
    return EXIT_OK if outcome.passed(options) else EXIT_FAILED
