"""``evalh calibrate --plot``: each calibration's score distributions by label and its ROC curve.

SVG is written by hand (no dependency); PNG needs matplotlib, an optional extra, and says how to get it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

import numpy as np

from evalh.calibration.analysis import Calibration
from evalh.errors import ConfigError

__all__ = ["svg_text", "write_plot"]

_W, _H, _PAD = 360, 220, 36  # one panel
_PASS, _FAIL = "#2e7d32", "#c62828"


def write_plot(path: Path, calibrations: Sequence[Calibration]) -> None:
    suffix = path.suffix.lower()
    if suffix == ".svg":
        from evalh.reports.writers import write_text_file

        write_text_file(path, svg_text(calibrations))
    elif suffix == ".png":
        _write_png(path, calibrations)
    else:
        raise ConfigError(f"--plot writes .svg or .png files (got {path.name!r})", where="--plot")


def _histogram_panel(c: Calibration, x0: float, y0: float) -> list[str]:
    values = np.asarray(c.values, dtype=np.float64)
    labels = np.asarray(c.labels, dtype=bool)
    low, high = float(values.min()), float(values.max())
    edges = np.linspace(low, high if high > low else low + 1, 21)
    inner_w, inner_h = _W - 2 * _PAD, _H - 2 * _PAD
    counts = [np.histogram(values[labels], edges)[0], np.histogram(values[~labels], edges)[0]]
    top = max(1, int(max(counts[0].max(initial=0), counts[1].max(initial=0))))
    width = inner_w / 20
    parts = [_frame(x0, y0), _text(x0 + _PAD, y0 + 20, f"{c.assertion} [{c.provider}] scores")]
    for count, colour in zip(counts, (_PASS, _FAIL), strict=True):
        for i, n in enumerate(count):
            h = inner_h * n / top
            x, y = x0 + _PAD + i * width, y0 + _H - _PAD - h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{colour}" fill-opacity="0.45"/>'
            )
    marker = c.current_threshold  # where to draw the line: a position, not a verdict
    if marker is not None and low <= marker <= high and high > low:
        x = x0 + _PAD + inner_w * (marker - low) / (high - low)
        parts.append(_line(x, y0 + _PAD, x, y0 + _H - _PAD, "#555", dash=True))
    parts.append(_text(x0 + _PAD, y0 + _H - 10, f"{low:.3g}"))
    parts.append(_text(x0 + _W - _PAD - 30, y0 + _H - 10, f"{high:.3g}"))
    parts.append(_text(x0 + _W - _PAD - 120, y0 + _PAD + 12, "pass", colour=_PASS))
    parts.append(_text(x0 + _W - _PAD - 80, y0 + _PAD + 12, "fail", colour=_FAIL))
    return parts


def _roc_panel(c: Calibration, x0: float, y0: float) -> list[str]:
    inner_w, inner_h = _W - 2 * _PAD, _H - 2 * _PAD
    title = f"ROC, AUC {c.auc:.3f}" if c.auc is not None else f"not calibrated: {c.problem}"
    parts = [_frame(x0, y0), _text(x0 + _PAD, y0 + 20, title)]
    parts.append(_line(x0 + _PAD, y0 + _H - _PAD, x0 + _W - _PAD, y0 + _PAD, "#bbb", dash=True))
    points = " ".join(
        f"{x0 + _PAD + fpr * inner_w:.1f},{y0 + _H - _PAD - tpr * inner_h:.1f}" for fpr, tpr in c.roc
    )
    if points:
        parts.append(f'<polyline points="{points}" fill="none" stroke="#1565c0" stroke-width="2"/>')
    parts.append(_text(x0 + _PAD, y0 + _H - 10, "false positive rate"))
    return parts


def svg_text(calibrations: Sequence[Calibration]) -> str:
    body: list[str] = []
    for row, c in enumerate(calibrations):
        y0 = row * _H
        if c.values:
            body.extend(_histogram_panel(c, 0, y0))
        body.extend(_roc_panel(c, _W, y0))
    height = max(1, len(calibrations)) * _H
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * _W}" height="{height}" '
        f'viewBox="0 0 {2 * _W} {height}" font-family="sans-serif" font-size="11">\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )


def _frame(x0: float, y0: float) -> str:
    return (
        f'<rect x="{x0 + _PAD}" y="{y0 + _PAD}" width="{_W - 2 * _PAD}" height="{_H - 2 * _PAD}" '
        'fill="none" stroke="#999"/>'
    )


def _line(x1: float, y1: float, x2: float, y2: float, colour: str, *, dash: bool = False) -> str:
    style = ' stroke-dasharray="4 3"' if dash else ""
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}"{style}/>'


def _text(x: float, y: float, text: str, *, colour: str = "#222") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" fill="{colour}">{escape(text)}</text>'


def _write_png(path: Path, calibrations: Sequence[Calibration]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "--plot to a .png needs matplotlib, which is not installed",
            where="--plot",
            hint="pip install matplotlib, or write an .svg (--plot calibration.svg) which needs nothing",
        ) from None
    figure, axes = plt.subplots(len(calibrations), 2, figsize=(10, 3.2 * len(calibrations)), squeeze=False)
    for (hist, roc), c in zip(axes, calibrations, strict=True):
        values, labels = np.asarray(c.values), np.asarray(c.labels, dtype=bool)
        hist.hist([values[labels], values[~labels]], bins=20, label=["pass", "fail"], color=[_PASS, _FAIL])
        hist.set_title(f"{c.assertion} [{c.provider}]")
        hist.legend()
        if c.roc:
            roc.plot(*zip(*c.roc, strict=True))
        roc.plot([0, 1], [0, 1], linestyle="--", color="#bbb")
        roc.set_title(f"ROC, AUC {c.auc:.3f}" if c.auc is not None else "not calibrated")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
