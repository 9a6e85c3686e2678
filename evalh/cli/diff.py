"""``evalh diff A B``: what changed between two runs (stored runs or JSON report files).

Exit codes: 0 no new failures; 1 new failures (regressions: tests that passed in A and fail or error
in B, or with repeats in both runs tests significantly worse over their repeats; and tests new in B that
fail); 2 a reference that names no run or file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.params import AlphaOption
from evalh.errors import EXIT_FAILED, EXIT_OK, ConfigError

__all__ = ["EXIT_CODES", "HELP", "check_fail_on", "diff"]

EXIT_CODES = (
    "Exit codes: 0 no new failures; 1 new failures (a test that passed in BASELINE and fails or errors in "
    "CURRENT, or a test new in CURRENT that fails; when both runs have repeats, a test significantly worse "
    "over its repeats at --alpha instead of a row that flipped); 2 a reference that names no stored run or "
    "a JSON report that cannot be read (the error names the file and the field), or an --alpha outside "
    "0.0001-0.5."
)
HELP = (
    "Compare two runs row by row: regressions, fixes, score changes, added and removed tests. BASELINE "
    "and CURRENT are stored runs (a run id, latest, latest~N) or JSON report files. " + EXIT_CODES
)

BaselineArg = Annotated[
    str,
    typer.Argument(metavar="BASELINE", help="The baseline: a run id, latest, latest~N, or a JSON report."),
]
CurrentArg = Annotated[
    str,
    typer.Argument(metavar="CURRENT", help="The run to judge: a run id, latest, latest~N, or a JSON report."),
]


def diff(
    baseline: BaselineArg,
    current: CurrentArg,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Also write the comparison as JSON to this file.")
    ] = None,
    tolerance: Annotated[
        float,
        typer.Option("--tolerance", min=0, help="Report score changes larger than this (scores are 0-1)."),
    ] = 0.01,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    alpha: AlphaOption = None,
) -> None:
    """Compare the run CURRENT with the run BASELINE."""
    from evalh.model import DEFAULT_ALPHA
    from evalh.reports.console import echo, echo_json
    from evalh.reports.writers import check_report_paths, write_json_file
    from evalh.store import open_store
    from evalh.store.compare import compare_rows
    from evalh.store.refs import is_report_file, run_rows

    alpha = DEFAULT_ALPHA if alpha is None else alpha  # not given: the run option's default
    if output is not None:  # before anything is read: never over A or B
        check_report_paths([output], [ref for ref in (baseline, current) if is_report_file(ref)])
    if is_report_file(baseline) and is_report_file(current):
        before, after = run_rows(baseline, None, where="A"), run_rows(current, None, where="B")
        comparison = compare_rows(before, after, tolerance=tolerance, alpha=alpha)
    else:
        with open_store() as store:  # a stored run's rows are read as they are compared
            before, after = run_rows(baseline, store, where="A"), run_rows(current, store, where="B")
            comparison = compare_rows(before, after, tolerance=tolerance, alpha=alpha)
    if output is not None:
        write_json_file(output, comparison.to_json())
    if as_json:
        echo_json(comparison.to_json())
    else:
        for line in comparison.lines():
            echo(line)
    for line in comparison.judge_changes:
        echo(line, err=True)  # stderr: --json output stays JSON
    raise typer.Exit(EXIT_FAILED if comparison.failed else EXIT_OK)


def check_fail_on(fail_on: str, baseline: str | None, fail_under: float | None) -> None:
    """``evalh run``'s --fail-on: ``failures`` (the default) or ``regressions``, which needs --baseline
    and decides the exit code alone."""
    if fail_on not in ("failures", "regressions"):
        raise ConfigError(f"--fail-on {fail_on!r} is not known", hint="Use --fail-on failures or regressions")
    if fail_on == "regressions" and baseline is None:
        raise ConfigError(
            "--fail-on regressions needs a run to compare with",
            where="--fail-on",
            hint="Add --baseline latest (the previous run), a run id or a JSON report",
        )
    if fail_on == "regressions" and fail_under is not None:
        raise ConfigError(
            "--fail-on regressions and --fail-under each decide the exit code", hint="Choose one"
        )
