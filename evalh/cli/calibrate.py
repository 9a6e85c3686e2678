"""``evalh calibrate CONFIG``: thresholds derived from labelled tests instead of guessed.

Each test carries ``metadata.label: pass|fail`` (in a CSV, a ``__metadata:label`` column), or, with
``--labels REF``, the rows a person rated pass or fail in run REF take their rating as the label
(:mod:`evalh.session.rated_labels`). The config runs through the ordinary run path, once per ``--provider``
given (each swaps the embedder of every embedding assertion); every scored assertion's measured values
are then compared with the labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalh.errors import EXIT_FAILED, EXIT_OK, ConfigError

if TYPE_CHECKING:  # imported when the command runs: evalh --help stays fast
    from evalh.calibration.analysis import Calibration
    from evalh.calibration.judges import JudgeAgreement, PanelAgreement
    from evalh.session.calibration import Collected
    from evalh.session.rated_labels import LabelCounts

__all__ = ["EXIT_CODES", "HELP", "calibrate"]

EXIT_CODES = (
    "Exit codes: 0 at least one assertion calibrated (or a judge's agreement measured); 1 none could be "
    "(too few labels, one label only, every score tied: the reason is printed); 2 a config or label error, "
    "or a --labels run that is unknown, has no rated row, or is another config's."
)
HELP = (
    "Suggest thresholds from labelled tests (metadata.label: pass|fail, or with --labels REF the "
    "pass/fail ratings of a stored run): ROC AUC with a bootstrap "
    "interval, the thresholds with the best accuracy, the best Youden's J and the lowest reaching "
    "--precision, and the confusion matrix at the threshold the config uses now; for pass/fail judges, "
    "accuracy, the confusion matrix and Cohen's kappa with a bootstrap interval against the labels, and "
    "Fleiss' kappa between several judges of one assertion. " + EXIT_CODES
)
_PICKS = ("youden", "accuracy", "precision")


def calibrate(
    config: Annotated[Path, typer.Argument(help="A config whose tests carry metadata.label: pass|fail.")],
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider",
            help="Score the embedding assertions with this provider (repeat to compare several).",
        ),
    ] = None,
    precision: Annotated[
        float, typer.Option("--precision", min=0, max=1, help="Target precision of a suggested threshold.")
    ] = 0.95,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the calibration as JSON to this file.")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Draw score distributions and ROC curves to this .svg (or .png) file."),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Print each assertion's suggested threshold as config YAML.")
    ] = False,
    pick: Annotated[
        str, typer.Option("--pick", help="The suggestion --write prints: youden, accuracy or precision.")
    ] = "youden",
    histogram: Annotated[
        bool, typer.Option("--histogram/--no-histogram", help="Print each score histogram.")
    ] = True,
    rounds: Annotated[
        int, typer.Option("--bootstrap", min=10, help="Bootstrap resamples of the AUC.")
    ] = 1000,
    labels: Annotated[
        str | None,
        typer.Option(
            "--labels",
            metavar="REF",
            help="Take the labels from the pass/fail ratings of this run (latest: this config's newest run; "
            "latest~N, a run id, or a JSON report exported with its ratings), over metadata.label.",
        ),
    ] = None,
) -> None:
    """Suggest thresholds from labelled tests."""
    from evalh.calibration.analysis import calibrate_samples
    from evalh.reports.calibration import histogram_lines, print_calibrations, print_judges
    from evalh.reports.console import echo
    from evalh.session.calibration import collect

    if pick not in _PICKS:
        raise ConfigError(
            f"--pick {pick!r} is not known", where="--pick", hint="Use youden, accuracy or precision"
        )
    collected = collect(config, provider or [], labels=labels)
    samples, unlabelled = collected.samples, collected.unlabelled
    calibrations = [
        calibrate_samples(
            s.assertion,
            s.provider,
            s.direction,
            s.values,
            s.labels,
            current_threshold=s.current_threshold,
            errors=s.errors,
            precision=precision,
            rounds=rounds,
        )
        for s in samples
    ]
    judges, panels = _judges(collected, rounds)
    if not calibrations and not judges:
        raise ConfigError(
            "the config has no scored assertion to calibrate "
            "(similar, rouge-n, levenshtein, a judge's score...)",
            where=str(config),
            hint="Add the assertion whose threshold you want to the tests (or defaultTest)",
        )
    if collected.rated is not None:
        echo(collected.rated.summary())
    elif unlabelled:
        echo(f"{unlabelled} result row(s) had no metadata.label and were left out.")
    if calibrations:
        print_calibrations(calibrations, precision=precision)
    if judges:
        print_judges(judges, panels)
    if histogram:
        for c in calibrations:
            echo("\n".join(histogram_lines(c)))
    _outputs(calibrations, output, plot, judges, panels, collected.rated)
    if write:
        echo("\n".join(_suggestions(calibrations, pick)))
    measured = any(c.problem is None for c in calibrations) or any(j.kappa is not None for j in judges)
    raise typer.Exit(EXIT_OK if measured else EXIT_FAILED)


def _judges(collected: Collected, rounds: int) -> tuple[list[JudgeAgreement], list[PanelAgreement]]:
    from evalh.calibration.judges import judge_agreement, panel_agreement

    judges = [
        judge_agreement(v.assertion, v.judge, v.verdicts, v.labels, errors=v.errors, rounds=rounds)
        for v in collected.verdicts
    ]
    panels = [panel_agreement(p.assertion, p.judges, p.rows) for p in collected.panels]
    return judges, panels


def _outputs(
    items: Sequence[Calibration],
    output: Path | None,
    plot: Path | None,
    judges: Sequence[JudgeAgreement] = (),
    panels: Sequence[PanelAgreement] = (),
    rated: LabelCounts | None = None,
) -> None:
    from evalh.reports.console import echo
    from evalh.reports.writers import write_json_file

    if output is not None:
        document: dict[str, object] = {"calibrations": [c.to_json() for c in items]}
        if judges:  # only then: a calibration of scores alone writes what it wrote before
            document["judges"] = [j.to_json() for j in judges]
            document["judgePanels"] = [p.to_json() for p in panels]
        if rated is not None:  # only with --labels: where the labels came from
            document["labels"] = rated.to_json()
        write_json_file(output, document)
        echo(f"Wrote {output}")
    if plot is not None:
        from evalh.reports.calibration_plot import write_plot

        write_plot(plot, items)
        echo(f"Wrote {plot}")


def _suggestions(calibrations: Sequence[Calibration], pick: str) -> list[str]:
    """YAML lines to paste: each assertion's suggested threshold, with the figure it was chosen by."""
    lines = [f"# suggested thresholds ({pick}); paste into the assertion of the same type"]
    for c in calibrations:
        if c.suggested is None:
            lines.append(f"# {c.assertion} [{c.provider}]: not calibrated: {c.problem}")
            continue
        chosen = {
            "youden": c.suggested.best_youden,
            "accuracy": c.suggested.best_accuracy,
            "precision": c.suggested.at_precision,
        }[pick]
        if chosen is None:
            lines.append(
                f"# {c.assertion} [{c.provider}]: "
                f"no threshold reaches precision {c.suggested.target_precision:g}"
            )
            continue
        lines.append(f"- type: {c.assertion.split(' ')[0]}  # {c.provider}, was {c.current_threshold}")
        lines.append(f"  threshold: {chosen.threshold:.4g}")
    return lines
