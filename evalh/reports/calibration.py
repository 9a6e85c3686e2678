"""``evalh calibrate``'s console output: one table row per assertion and provider, then a terminal
histogram of each one's scores by label (always available, unlike a plot)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rich.table import Table
from rich.text import Text

from evalh.calibration.analysis import Calibration
from evalh.calibration.judges import JudgeAgreement, PanelAgreement
from evalh.calibration.metrics import Confusion
from evalh.reports.console import make_console, table_box

__all__ = ["histogram_lines", "print_calibrations", "print_judges"]

_BAR = 40  # characters of the longest histogram bar


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _pick(c: Confusion | None) -> str:
    if c is None:
        return "none reaches it"
    precision = "-" if c.precision is None else f"{c.precision:.2f}"
    return f"{c.threshold:.4g} (acc {c.accuracy:.2f}, prec {precision}, rec {c.recall:.2f})"


def _current(c: Confusion | None, threshold: float | None) -> str:
    if c is None:
        return "-" if threshold is None else f"{threshold:g}"
    return f"{c.threshold:g}: {c.tp} TP {c.fp} FP {c.tn} TN {c.fn} FN (acc {c.accuracy:.2f})"


def print_calibrations(calibrations: Sequence[Calibration], *, precision: float) -> None:
    console = make_console()
    table = Table(title="Calibration (labels: pass / fail)", title_justify="left", box=table_box(console))
    columns = (
        "assertion",
        "provider",
        "labels P/F",
        "AUC [95% CI]",
        "best accuracy",
        "best Youden's J",
        f"lowest at precision {precision:g}",
        "at current threshold",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for c in calibrations:
        passing, failing = c.counts
        head = [c.assertion, c.provider, f"{passing}/{failing}"]
        if c.problem is not None or c.suggested is None:
            table.add_row(*(Text(x) for x in head), Text(f"not calibrated: {c.problem}", style="yellow"))
            continue
        low, high = c.auc_interval or (float("nan"), float("nan"))
        cells = (
            f"{c.auc:.3f} [{low:.3f}, {high:.3f}]",
            _pick(c.suggested.best_accuracy),
            _pick(c.suggested.best_youden),
            _pick(c.suggested.at_precision),
            _current(c.current, c.current_threshold),
        )
        table.add_row(*(Text(x) for x in (*head, *cells)))
    console.print(table)


def print_judges(judges: Sequence[JudgeAgreement], panels: Sequence[PanelAgreement]) -> None:
    """Pass/fail judges against the labels (kappa with its interval, however few the tests), then
    several judges of one assertion with each other."""
    console = make_console()
    table = Table(title="Judges against the labels", title_justify="left", box=table_box(console))
    for column in ("assertion", "judge", "tests", "accuracy", "Cohen's kappa [95% CI]", "confusion"):
        table.add_column(column, overflow="fold")
    for j in judges:
        c = j.confusion
        interval = f" [{j.kappa_interval[0]:.2f}, {j.kappa_interval[1]:.2f}]" if j.kappa_interval else ""
        kappa = "-" if j.kappa is None else f"{j.kappa:.2f}{interval}"
        matrix = "-" if c is None else f"{c.tp} TP {c.fp} FP {c.tn} TN {c.fn} FN"
        errors = f" ({j.errors} errors)" if j.errors else ""
        accuracy = "-" if c is None else f"{c.accuracy:.2f}"
        table.add_row(
            *(Text(x) for x in (j.assertion, j.judge, f"{j.items}{errors}", accuracy, kappa, matrix))
        )
    console.print(table)
    for p in panels:
        kappa = "undefined (every verdict the same)" if p.fleiss_kappa is None else f"{p.fleiss_kappa:.2f}"
        console.print(
            Text(
                f"{p.assertion}: {len(p.judges)} judges agree with each other: Fleiss' kappa "
                f"{kappa} over {p.items} tests"
            )
        )


def histogram_lines(c: Calibration, bins: int = 12) -> list[str]:
    """The scores by label as horizontal bars: '#' labelled pass, '.' labelled fail; the bins holding
    the current and the Youden threshold are marked."""
    if not c.values:
        return []
    values = np.asarray(c.values, dtype=np.float64)
    labels = np.asarray(c.labels, dtype=bool)
    low, high = float(values.min()), float(values.max())
    edges = np.linspace(low, high if high > low else low + 1, bins + 1)
    passing, _ = np.histogram(values[labels], edges)
    failing, _ = np.histogram(values[~labels], edges)
    scale = _BAR / max(1, int(max(passing.max(initial=0), failing.max(initial=0))))
    youden = c.suggested.best_youden.threshold if c.suggested else None
    lines = [f"{c.assertion} [{c.provider}]  # = labelled pass, . = labelled fail ({c.direction} is better)"]
    for i in range(bins):
        marks = [
            name
            for name, t in (("current threshold", c.current_threshold), ("Youden", youden))
            if t is not None and edges[i] <= t <= edges[i + 1] and (i == bins - 1 or t < edges[i + 1])
        ]
        bar_p = "#" * round(passing[i] * scale)
        bar_f = "." * round(failing[i] * scale)
        note = f"  <- {', '.join(marks)}" if marks else ""
        lines.append(
            f"  {edges[i]:8.4g}-{edges[i + 1]:<8.4g} "
            f"{passing[i]:3d} {bar_p:<{_BAR}} {failing[i]:3d} {bar_f}{note}"
        )
    return lines
