"""The ``evalh`` command. Thin: flags -> options -> library call -> reports -> exit code.

The only place that turns an :class:`~evalh.errors.EvalhError` into a message and an exit code.
Heavy modules (config, runner, reports) are imported inside the commands so ``evalh --help`` is fast.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from evalh.cli import calibrate, diff, merge, runs, view
from evalh.cli.args import EvalhGroup, PromptfooCommand
from evalh.common.limits import RUN_OPTION_BOUNDS
from evalh.common.version import __version__
from evalh.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_HANGUP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    ConfigError,
    EvalhError,
)
from evalh.secrets import redacted_stdio

__all__ = ["app", "main"]

EXIT_CODES_HELP = (
    "Exit codes: 0 every test passed; 1 a test failed or errored (or the pass rate is under "
    "--fail-under; with --fail-on regressions, a new failure since --baseline; for evalh diff, a new "
    "failure in B); 2 invalid config or usage (also a filter that selects no test, or a run reference "
    "that names no stored run or report); 130 interrupted "
    "(Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP): the results finished so far are still "
    "written to every report, marked interrupted."
)
_SIGNAL_EXIT = {"SIGHUP": EXIT_HANGUP, "SIGINT": EXIT_INTERRUPTED, "SIGTERM": EXIT_TERMINATED}

app = typer.Typer(
    name="evalh",
    cls=EvalhGroup,
    help="A declarative, YAML-driven evaluator for LLM outputs, with semantic scoring offline.\n\n"
    + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
cache_app = typer.Typer(help="Inspect or clear the embedding and completion cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

_state = {"verbose": False}
_CONCURRENCY, _REPEAT = RUN_OPTION_BOUNDS["max_concurrency"], RUN_OPTION_BOUNDS["repeat"]


def _echo(text: str, *, err: bool = False) -> None:
    """A message that may quote data (a report's field, a row's test, a path): controls escaped."""
    from evalh.reports.console import echo  # rich, loaded only when there is something to print

    echo(text, err=err)


def _fail(error: EvalhError) -> NoReturn:
    _echo(f"evalh: error: {error.render()}", err=True)
    raise typer.Exit(error.exit_code)


def _warning(text: str) -> None:
    _echo(f"evalh: warning: {text}", err=True)


@contextmanager
def _user_errors(*, strict: bool = False) -> Iterator[None]:
    """EvalhError -> its one-paragraph message and exit code; a bug -> a short note (trace with --verbose).
    Warnings go to stderr, each once (errors with ``strict``). Everything the command prints has the
    run's secret values redacted (evalh.secrets)."""
    from evalh.common.notices import warnings_to

    with redacted_stdio(), warnings_to(_warning, strict=strict):
        try:
            yield
        except EvalhError as error:  # the user's to fix: its message says where and how, never a traceback
            _fail(error)
        except KeyboardInterrupt:
            typer.echo("evalh: interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:  # stdout's reader went away (`evalh runs list | head`): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush fails no more
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as error:
            if _state["verbose"]:
                traceback.print_exc()
            _echo(
                f"evalh: internal error: {type(error).__name__}: {error}. This is a bug in evalh; "
                "run again with --verbose for the traceback and report it.",
                err=True,
            )
            raise typer.Exit(EXIT_FAILED) from None


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalh {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """evalh: evaluate LLM outputs against YAML-declared tests."""


ConfigArg = Annotated[
    Path | None,
    typer.Argument(
        help="The config file (default: evalh.yaml, then promptfooconfig.yaml here).", show_default=False
    ),
]


ConfigOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--config",
        "-c",
        help="The config file (same as the argument); several (-c a.yaml b.yaml) are merged as promptfoo "
        "merges them.",
    ),
]
EnvFileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--env-file",
        "--env-path",
        help="Load KEY=VALUE lines into the environment (repeatable; later files win). Without it, "
        "./.env is loaded when present.",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Make warnings errors (exit 2): an undefined template variable, which otherwise renders "
        "empty as in promptfoo, and an unknown config key, which is otherwise ignored. Also "
        "evaluateOptions.strict.",
    ),
]


def _parse_vars(pairs: list[str]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--var expects key=value, got {pair!r}", hint="Example: --var name=Ada")
        parsed[key.strip()] = value
    return parsed


def _config_path(config: Path | None, config_option: list[Path] | None) -> list[Path]:
    """The config files to load: several -c are merged (promptfoo's -c a.yaml b.yaml)."""
    from evalh.config.load import find_config

    if config_option and config is not None:
        raise ConfigError(
            "the config is named twice: as an argument and with -c",
            where=str(config),
            hint="Name it once; to merge several configs, repeat -c (-c a.yaml -c b.yaml)",
        )
    chosen = config_option or ([config] if config is not None else [])
    return chosen or [find_config()]


@app.command(cls=PromptfooCommand)
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
            "for new failures since --baseline (tests that passed there, and new tests that fail), so "
            "known failures do not fail CI.",
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
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Call every provider instead of reading the cache, and write their answers to it.",
        ),
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--fail-under", min=0, max=100, help="Exit 0 when the pass rate is at least PCT percent."
        ),
    ] = None,
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
    with --fail-on regressions: a new failure since --baseline); 2 invalid config or usage, a provider
    in use without its API key (before any call), a filter that selects no test, or a --baseline that
    names no run or report; 130 Ctrl-C, 143 SIGTERM, 129
    SIGHUP (the results finished so far are still written to every report, marked interrupted).
    """
    from evalh.config.dotenv import dotenv_environment
    from evalh.runner.filters import Filters, parse_metadata_filters
    from evalh.runner.sharding import parse_shard
    from evalh.session.context import run_context

    _state["verbose"] = verbose
    with _user_errors(strict=strict), run_context(), dotenv_environment(env_file or []):
        diff.check_fail_on(fail_on, baseline, fail_under)
        code = _run(
            _config_path(config, config_option),
            outputs=output or [],
            max_concurrency=max_concurrency,
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
            delay_ms=delay,
            shard=None if shard is None else parse_shard(shard),
            description=description,
            record=not no_write,
            baseline=baseline,
            fail_on_regressions=fail_on == "regressions",
            table_cell_max_length=table_cell_max_length,
            cli_vars=_parse_vars(var or []),
            repeat=repeat,
            cache=not no_cache,
            fail_under=fail_under,
            grader=grader,
            show_table=not no_table,
            show_progress=not no_progress,
            verbose=verbose,
        )
    raise typer.Exit(code)


app.command(
    "eval",
    cls=PromptfooCommand,
    help="The same as run (promptfoo's name for it): every flag of run works here.",
)(run)


def _run(
    config_path: list[Path],
    *,
    outputs: list[str],
    fail_under: float | None,
    show_table: bool,
    show_progress: bool,
    verbose: bool,
    table_cell_max_length: int | None = None,
    baseline: str | None = None,
    fail_on_regressions: bool = False,
    **settings: Any,
) -> int:
    from evalh.session.run import RunSettings, run_config

    outcome = run_config(
        config_path,
        RunSettings(outputs=tuple(outputs), **settings),
        show_table=show_table,
        show_progress=show_progress,
        verbose=verbose,
        cell_limit=table_cell_max_length,
        note=lambda text: _echo(f"evalh: {text}", err=True),
        baseline=baseline,
        fail_on_regressions=fail_on_regressions,
    )
    run_result = outcome.result
    if run_result.interrupted:
        signal_name = run_result.interrupted_by or "SIGINT"
        _echo(
            f"evalh: interrupted by {signal_name}: {len(run_result.results)} finished row(s) written, "
            f"{run_result.not_run} not run",
            err=True,
        )
        return _SIGNAL_EXIT.get(signal_name, EXIT_INTERRUPTED)
    if fail_on_regressions and outcome.comparison is not None:
        return EXIT_FAILED if outcome.comparison.failed else EXIT_OK
    if fail_under is not None:
        return EXIT_OK if run_result.pass_rate >= fail_under else EXIT_FAILED
    return EXIT_OK if run_result.pass_rate >= 100.0 else EXIT_FAILED


@app.command(cls=PromptfooCommand)
def validate(
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    grader: Annotated[str | None, typer.Option("--grader", help="Grader provider id, as for run.")] = None,
    var: Annotated[
        list[str] | None, typer.Option("--var", help="Set a variable for every test: key=value.")
    ] = None,
    filter_pattern: Annotated[
        str | None, typer.Option("--filter-pattern", help="Only tests whose description matches this regex.")
    ] = None,
    env_file: EnvFileOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks of bugs.")] = False,
    strict: StrictOption = False,
) -> None:
    """Check a config against the schema and every assertion's rules, without calling any provider.

    .env (or each --env-file) is loaded as run loads it. Every problem is reported in one pass.
    Warnings (an undefined variable, an unknown key) are printed and still valid, unless --strict.
    Exit codes: 0 valid; 2 invalid (each problem is printed with file:line:column and its path).
    """
    from evalh.config.dotenv import dotenv_environment, environment_overlay
    from evalh.session.context import run_context

    _state["verbose"] = verbose
    with _user_errors(strict=strict), run_context(), dotenv_environment(env_file or []):
        from evalh.config.load import load_suite
        from evalh.config.schema_comment import check_schema_comment
        from evalh.reports.writers import check_report_paths
        from evalh.runner.cache import warn_latency_with_cache
        from evalh.runner.credentials import keyless_providers, missing_keys_error
        from evalh.runner.filters import filter_by_description

        paths = _config_path(config, config_option)
        for path in paths:
            check_schema_comment(path)
        checks = (  # outputPath as run would check it, and the filter: reported with the rest
            lambda loaded, _where: check_report_paths(loaded.output_paths, loaded.input_files),
            lambda loaded, _where: filter_by_description(loaded, filter_pattern),
        )
        suite = load_suite(
            paths, grader=grader, cli_vars=_parse_vars(var or []), checks=checks, report_config=False
        )
        suite = filter_by_description(suite, filter_pattern)
        with environment_overlay(suite.env):  # as run sees it
            keyless = keyless_providers(suite)
            warn_latency_with_cache(suite)  # EVALH_CACHE_ENABLED may come from the config's env:
        if keyless:  # secrets are the environment's, not the config's: never an error here, even --strict
            _warning(missing_keys_error(keyless, where=suite.config_path, validating=True).render())
        count = sum(len(test.asserts) for test in suite.tests)
        shown = " + ".join(str(path) for path in paths)
        _echo(
            f"{shown}: valid ({len(suite.tests)} tests, {count} assertions, "
            f"{max(1, len(suite.prompts))} prompts, {max(1, len(suite.providers))} providers)"
        )


@app.command()
def schema(
    report: Annotated[bool, typer.Option("--report", help="Print the JSON report's schema instead.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write it to this file instead of printing it.")
    ] = None,
) -> None:
    """Print the JSON Schema of the config, every assertion type included (for editors:
    `evalh schema -o evalh.schema.json`, then `# yaml-language-server: $schema=evalh.schema.json`)."""
    with _user_errors():
        from evalh.config.schema import schema_text, write_schema

        name = "report.schema.json" if report else "evalh.schema.json"
        if output is None:
            typer.echo(schema_text(name), nl=False)
        else:
            _echo(f"wrote {write_schema(output, name)}")


@app.command("list")
def list_(what: Annotated[str, typer.Argument(help="assertions or providers")]) -> None:
    """List the assertion types or provider ids evalh knows (from its registries)."""
    with _user_errors():
        from evalh.reports.listing import print_assertions, print_providers

        printers: dict[str, Callable[[], None]] = {
            "assertions": print_assertions,
            "providers": print_providers,
        }
        if what not in printers:
            raise ConfigError(
                f"cannot list {what!r}", hint="Use `evalh list assertions` or `evalh list providers`"
            )
        printers[what]()


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Where to write evalh.yaml.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing evalh.yaml.")] = False,
) -> None:
    """Write a commented starter config that runs offline (evalh run in that directory)."""
    with _user_errors():
        from evalh.session.run import write_starter

        path = write_starter(directory, force=force)
        _echo(f"Wrote {path}. Run it with: evalh run {path}")


@cache_app.command("info")
def cache_info() -> None:
    """Where the cache is, its size, how long an entry is read (EVALH_CACHE_TTL) and its entries."""
    with _user_errors():
        from evalh.runner.cache import Cache

        info = Cache.open().info()
        _echo(f"path: {info['path']}")
        typer.echo(f"size: {info['bytes']:,} bytes")
        typer.echo(
            f"entries are read for {info['ttlSeconds']:,.0f} s after they are written (EVALH_CACHE_TTL)"
        )
        entries = info["entries"] or {"(empty)": 0}
        for namespace, count in entries.items():
            typer.echo(f"{namespace}: {count:,} entries")


@cache_app.command("clear")
def cache_clear() -> None:
    """Delete every cached embedding and completion."""
    with _user_errors():
        from evalh.runner.cache import Cache

        removed = Cache.open().clear()
        typer.echo(f"Cleared {removed:,} cache entries.")


def _guarded(command: Callable[..., None]) -> Callable[..., None]:
    """A sub-command from evalh/cli/ with the user-error handling every command has."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> None:
        with _user_errors():
            command(*args, **kwargs)

    return guarded


app.command("view", help=view.HELP)(_guarded(view.view))
runs.register(app, _guarded)
app.command("diff", help=diff.HELP)(_guarded(diff.diff))
app.command("calibrate", help=calibrate.HELP)(_guarded(calibrate.calibrate))
app.command("merge", help=merge.HELP)(_guarded(merge.merge))


def _exit_now_if_stuck(code: object) -> None:
    """After a run stopped by a signal (its reports written), do not wait for a worker thread still
    inside user code or a provider call: exiting normally would join it, for as long as it takes."""
    if not isinstance(code, int) or code not in _SIGNAL_EXIT.values():
        return
    main_thread = threading.main_thread()
    if any(t.is_alive() and not t.daemon and t is not main_thread for t in threading.enumerate()):
        from evalh.runtimes.processes import kill_all_groups

        kill_all_groups()  # os._exit skips atexit, where exec: programs and Python workers are killed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit as exit_:
        _exit_now_if_stuck(exit_.code)
        raise
