"""``evalh runs list|show|rate|delete|prune|import``: the run history in the run store (:mod:`evalh.store`).

Plain text, one run per line, so ``evalh runs list | grep`` finds whole words; ``--json`` for
machines. ``runs rate`` records a person's verdict on a row (:mod:`evalh.store.ratings`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["HELP", "delete", "import_", "list_", "prune", "rate", "show"]

HELP = (
    "The run history: every evalh run is recorded in $EVALH_HOME/runs.sqlite3 (default ~/.evalh) unless "
    "--no-write. A REF is a run id (or a prefix of one), latest, or latest~N."
)

RefArg = Annotated[
    str, typer.Argument(metavar="REF", help="A run id (or a prefix naming one run), latest, or latest~N.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _line(run: Any) -> str:
    from evalh.reports.viewdata import run_name  # here: the viewer's data module is slow to import

    rate = f"{run.pass_rate:.1f}%"
    figures = f"{run.passed}/{run.rows} passed ({rate})"
    if run.errors:
        figures += f", {run.errors} errors"
    state = "" if run.state == "complete" else f" [{run.state}]"
    source = " (imported)" if run.source == "import" else ""
    # named as the viewer names it: the description, else the config's file name (never the id twice)
    name = run_name(run.description, run.config_path, "")
    description = f"  {name}" if name else ""
    return f"{run.id}  {run.created_at}  {figures}{state}{source}{description}"


def list_(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, help="At most N runs, newest first; 0: all.")
    ] = 20,
    as_json: JsonOption = False,
) -> None:
    """List the stored runs, newest first: id, start time, pass counts, state, description (else the
    config's file name)."""
    from evalh.reports.console import echo
    from evalh.store import open_store

    with open_store() as store:
        runs = store.list_runs(limit or None)
        if as_json:
            echo(json.dumps([run.to_json() for run in runs], indent=2))
            return
        if not runs:
            echo(f"No runs in {store.path} yet: evalh run records every run unless --no-write.")
        for run in runs:
            echo(_line(run))


def show(
    ref: RefArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as its JSON report.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every row, whole reasons.")] = False,
    table_cell_max_length: Annotated[
        int | None, typer.Option("--table-cell-max-length", min=1, help="Cut table cells at N characters.")
    ] = None,
    output: Annotated[
        list[str] | None,
        typer.Option(
            "--output",
            "-o",
            help="Also write the run (ratings applied): .json .xml/.junit.xml .md .csv .yaml .html "
            "(repeatable).",
        ),
    ] = None,
) -> None:
    """Show one stored run: its summary and results table (or, with --json, its JSON report); rated
    rows show their rating. -o writes it in any report format."""
    from evalh.reports.console import echo
    from evalh.reports.table import print_report
    from evalh.reports.writers import check_report_paths
    from evalh.store import open_store
    from evalh.store.export import indented_report

    outputs = output or []
    check_report_paths(outputs)  # before anything is read
    with open_store() as store:
        summary = store.resolve(ref)
        if as_json:  # written as it is read: a large run is never held whole
            _echo_pieces(indented_report(store.load_run(summary.id, lazy=True)))
        document = store.load_run(summary.id) if outputs or not as_json else {}
    if not as_json:
        echo(_line(summary))
        if summary.config_path:
            echo(f"config: {summary.config_path}")
        print_report(document, verbose=verbose, cell_limit=table_cell_max_length)
    if outputs:
        _write_reports(summary.id, document, outputs)


def _write_reports(run_id: str, document: dict[str, Any], outputs: list[str]) -> None:
    """The stored run written to ``outputs`` by the report writers ``evalh merge`` uses."""
    from evalh.reports.console import echo
    from evalh.reports.writers import combine_report_errors, write_each_report
    from evalh.session.merge import run_of_report

    run = run_of_report(f"the stored run {run_id}", document)
    failures = write_each_report(run, outputs, eval_id=run_id)
    failed = {failure.where for failure in failures}
    for path in outputs:
        if path not in failed:
            echo(f"Wrote {path}", err=True)
    if failures:
        raise combine_report_errors(failures)


def rate(
    ref: RefArg,
    row_id: Annotated[
        str,
        typer.Argument(
            metavar="ROW_ID", help="The row's id (its `id` in the JSON report) or a unique prefix of it."
        ),
    ],
    passed: Annotated[bool, typer.Option("--pass", help="The row passes, whatever its grading.")] = False,
    failed: Annotated[bool, typer.Option("--fail", help="The row fails, whatever its grading.")] = False,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the row's rating: its graded verdict holds again.")
    ] = False,
    score: Annotated[
        float | None,
        typer.Option("--score", help="The row's score, 0 to 1 (default 1 for --pass, 0 --fail)."),
    ] = None,
    comment: Annotated[str, typer.Option("--comment", help="Why (at most 4,000 characters).")] = "",
) -> None:
    """Rate one row of a stored run pass or fail, as a person (EVALH_REVIEWER, else your OS user):
    its verdict in every report, diff and the viewer is the rating's, until --clear."""
    from evalh.reports.console import echo
    from evalh.store import open_store

    _check_verdict(passed, failed, clear, score, comment)
    with open_store() as store:
        run = store.resolve(ref, report_files=False)
        if clear:
            had = store.clear_rating(run.id, row_id)
            echo(
                f"Cleared the rating of row {row_id} of {run.id}: its graded verdict holds again"
                if had
                else f"Row {row_id} of {run.id} has no rating: nothing to clear"
            )
            return
        rating = store.rate(run.id, row_id, passed=passed, score=score, comment=comment)
    verdict = "PASS" if rating.passed else "FAIL"
    echo(f"Rated row {rating.row_id} of {run.id} {verdict} (score {rating.score:.2f}) as {rating.reviewer}")
    if rating.comment:
        echo(f"comment: {rating.comment}")


def _check_verdict(passed: bool, failed: bool, clear: bool, score: float | None, comment: str) -> None:
    from evalh.errors import ConfigError

    if passed + failed + clear != 1:
        raise ConfigError(
            "give exactly one of --pass, --fail and --clear",
            where="evalh runs rate",
            hint="e.g. evalh runs rate latest ROW_ID --fail --comment 'wrong tone'",
        )
    if clear and (score is not None or comment):
        raise ConfigError(
            "--clear takes no --score or --comment", where="evalh runs rate", hint="Leave them out"
        )


def _echo_pieces(pieces: Iterable[str]) -> None:
    """``pieces`` of JSON text on stdout as one text and a line break, in writes of about 64 KB, with
    the control characters JSON text may hold raw escaped (a run's data never drives the terminal)."""
    from evalh.reports.console import terminal_json

    batch: list[str] = []
    size = 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= 1 << 16:
            typer.echo(terminal_json("".join(batch)), nl=False)
            batch, size = [], 0
    typer.echo(terminal_json("".join(batch)))


def delete(refs: Annotated[list[str], typer.Argument(help="The runs to delete (REF ...).")]) -> None:
    """Delete stored runs."""
    from evalh.reports.console import echo
    from evalh.store import open_store

    with open_store() as store:
        doomed = [store.resolve(ref) for ref in refs]  # every reference checked before any delete
        for run in doomed:
            store.delete(run.id)
            echo(f"Deleted {run.id}")


def prune(
    keep: Annotated[int, typer.Option("--keep", min=0, help="How many of the newest runs to keep.")],
) -> None:
    """Delete every stored run but the newest --keep N."""
    from evalh.store import open_store

    with open_store() as store:
        deleted = store.prune(keep)
    typer.echo(f"Deleted {len(deleted)} run(s), kept the newest {keep}.")


def import_(
    reports: Annotated[list[Path], typer.Argument(help="JSON reports (evalh or promptfoo -o FILE.json).")],
) -> None:
    """Bring JSON reports (e.g. CI artifacts) into the run store, each as a run."""
    from evalh.reports.console import echo
    from evalh.store import open_store, read_report_file

    documents = [(path, read_report_file(path)) for path in reports]  # all readable before any import
    with open_store() as store:
        for path, document in documents:
            run = store.import_report(document, source=str(path.resolve()))
            echo(f"Imported {path} as {run.id} ({run.passed}/{run.rows} passed)")


def register(app: typer.Typer, guard: Any) -> None:
    """Add ``evalh runs ...`` to ``app``, each command wrapped by ``guard`` (the CLI's error handling)."""
    runs_app = typer.Typer(help=HELP, no_args_is_help=True)
    runs_app.command("list")(guard(list_))
    runs_app.command("show")(guard(show))
    runs_app.command("rate")(guard(rate))
    runs_app.command("delete")(guard(delete))
    runs_app.command("prune")(guard(prune))
    runs_app.command("import")(guard(import_))
    app.add_typer(runs_app, name="runs")
