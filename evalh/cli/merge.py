"""``evalh merge SHARD.json... -o merged.json``: one run's reports from its shards' JSON reports.

The shards are checked to be every share of one run (evalh/session/merge.py), the rows are put back in
the unsharded order and every figure is computed again, then the summary is printed and each ``-o``
written (any format ``run`` writes: .json, .junit.xml, .md, .html, .csv...).

Exit codes, as ``evalh run``'s: 0 every row passed (or the pass rate is at least --fail-under; with
--fail-on regressions, no new failure since --baseline); 1 a row failed or errored, a shard was
interrupted (its report is incomplete) or a report could not be written; 2 a report that is not a
shard's, shards of different runs (another config, flags or N), a share given twice or missing, or a
shard's rows that are not its own (evalh/session/shard_reports.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalh.cli.params import FailUnderOption
from evalh.errors import EXIT_FAILED, EXIT_OK, ConfigError

if TYPE_CHECKING:  # the model's dataclasses are built on first run, not for `evalh --help`
    from evalh.model import RunRecord

__all__ = ["EXIT_CODES", "HELP", "merge"]

EXIT_CODES = (
    "Exit codes: 0 every row passed (or the pass rate is at least --fail-under; with --fail-on regressions, "
    "no new failure since --baseline); 1 a row failed or errored, a shard was interrupted, or a report "
    "could not be written; 2 a file that is not a shard's JSON report, shards of different runs, a shard "
    "given twice or missing, or rows that are not their shard's."
)
HELP = (
    "Join the JSON reports of the shards of one run (evalh run --shard i/N -o shard.json) into one run: "
    "rows in the unsharded order, stats, aggregates, named and derived metrics computed again, written "
    "with -o in any report format (merged.json merged.junit.xml summary.md ...). " + EXIT_CODES
)

ShardsArg = Annotated[
    list[Path], typer.Argument(metavar="SHARD.json...", help="Every shard's JSON report, in any order.")
]


def merge(
    shards: ShardsArg,
    output: Annotated[
        list[str] | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the merged run: .json .xml/.junit.xml .md .csv .yaml .html (repeatable).",
        ),
    ] = None,
    fail_under: FailUnderOption = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Compare the merged run with this run (a run id, latest, latest~N, or a JSON report): "
            "regressions are printed and go into the Markdown summary.",
        ),
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on", help="failures (the default) or regressions (exit 1 only for new failures)."
        ),
    ] = "failures",
    no_table: Annotated[
        bool, typer.Option("--no-table", help="Print the summary without the results table.")
    ] = False,
) -> None:
    """Merge shard reports into one run."""
    from evalh.cli.diff import check_fail_on
    from evalh.reports.codec_check import read_report_file
    from evalh.reports.console import echo
    from evalh.reports.json import new_eval_id, to_promptfoo_json
    from evalh.reports.table import print_lines, print_summary
    from evalh.reports.writers import check_report_paths, combine_report_errors, write_each_report
    from evalh.session.merge import merge_shards
    from evalh.session.shard_reports import check_shards
    from evalh.store.compare import compare_reports
    from evalh.store.refs import load_report

    check_fail_on(fail_on, baseline, fail_under)
    _check_inputs(shards)
    outputs = output or []
    check_report_paths(outputs, shards)  # never over a shard report, before anything is read
    before = load_report(baseline, where="--baseline") if baseline is not None else None
    checked = check_shards([(str(path), read_report_file(path, where=str(path))) for path in shards])
    run = merge_shards(checked)
    shares = ", ".join(f"{shard.share} {shard.path}" for shard in checked)
    echo(f"evalh: merged {len(checked)} shards ({shares}): {len(run.results)} rows", err=True)
    for shard in checked:
        if shard.block.get("interrupted"):
            echo(
                f"evalh: shard {shard.share} ({shard.path}) was interrupted: its rows are incomplete",
                err=True,
            )
    print_summary(run, show_table=not no_table)
    eval_id = new_eval_id(run.started_at)  # one id for every report and the comparison, as run's
    comparison = None
    if before is not None:
        comparison = compare_reports(before, to_promptfoo_json(run, eval_id=eval_id))
        print_lines(comparison.lines())
    summary = comparison.to_json() if comparison else None
    failures = write_each_report(run, outputs, eval_id=eval_id, comparison=summary)
    if failures:
        raise combine_report_errors(failures)
    regressed = bool(comparison.failed) if comparison is not None and fail_on == "regressions" else None
    raise typer.Exit(_exit_code(run, regressed, fail_under))


def _exit_code(run: RunRecord, regressed: bool | None, fail_under: float | None) -> int:
    """``run``'s rule on the merged rows; an interrupted shard fails the merge (its rows are missing)."""
    from evalh.model.verdict import run_passed

    return EXIT_OK if run_passed(run, fail_under=fail_under, regressed=regressed) else EXIT_FAILED


def _check_inputs(shards: list[Path]) -> None:
    """Shard reports are .json files: another name is an output meant for -o (``-o a.json b.xml``
    takes one path per -o here, since a path after it could be a shard's report to read)."""
    for path in shards:
        if not path.name.lower().endswith(".json"):
            raise ConfigError(
                "is not a JSON report: merge reads the shards' .json reports",
                where=str(path),
                hint="Give each output its own -o: evalh merge shard-*.json -o merged.json -o merged.xml",
            )
