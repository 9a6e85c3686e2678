"""One calibration per (assertion, provider): the figures ``metrics`` computes from its samples, as a
frozen record with its JSON form. A sample that cannot be calibrated carries the reason instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from evalh.calibration.metrics import (
    Confusion,
    Sweep,
    bootstrap_auc,
    confusion_at,
    roc_auc,
    roc_curve,
    sweep,
    why_not_calibratable,
)

__all__ = ["Calibration", "calibrate_samples", "confusion_json", "distribution"]

Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class Calibration:
    assertion: str
    provider: str
    direction: Direction
    values: tuple[float, ...]
    labels: tuple[bool, ...]
    current_threshold: float | None
    errors: int = 0
    problem: str | None = None  # why no threshold is suggested
    auc: float | None = None
    auc_interval: tuple[float, float] | None = None
    suggested: Sweep | None = None
    current: Confusion | None = None
    roc: tuple[tuple[float, float], ...] = ()  # (false positive rate, true positive rate)

    @property
    def counts(self) -> tuple[int, int]:
        passing = sum(self.labels)
        return passing, len(self.labels) - passing

    def to_json(self) -> dict[str, Any]:
        passing = [v for v, y in zip(self.values, self.labels, strict=True) if y]
        failing = [v for v, y in zip(self.values, self.labels, strict=True) if not y]
        return {
            "assertion": self.assertion,
            "provider": self.provider,
            "direction": self.direction,
            "labels": {"pass": self.counts[0], "fail": self.counts[1]},
            "errors": self.errors,
            "problem": self.problem,
            "auc": self.auc,
            "aucInterval95": list(self.auc_interval) if self.auc_interval else None,
            "distribution": {"pass": distribution(passing), "fail": distribution(failing)},
            "currentThreshold": self.current_threshold,
            "atCurrentThreshold": confusion_json(self.current),
            "suggested": _sweep_json(self.suggested),
            "roc": [list(point) for point in self.roc],
            "scores": {"pass": passing, "fail": failing},
        }


def distribution(values: Sequence[float]) -> dict[str, float] | None:
    """Five-number summary and mean of one label's scores (None when there are none)."""
    if not values:
        return None
    q = np.percentile(np.asarray(values, dtype=np.float64), [0, 25, 50, 75, 100])
    names = ("min", "q1", "median", "q3", "max")
    return {**{name: float(x) for name, x in zip(names, q, strict=True)}, "mean": float(np.mean(values))}


def calibrate_samples(
    assertion: str,
    provider: str,
    direction: Direction,
    values: Sequence[float],
    labels: Sequence[bool],
    *,
    current_threshold: float | None,
    errors: int = 0,
    precision: float = 0.95,
    rounds: int = 1000,
) -> Calibration:
    """AUC with its interval, the suggested thresholds and the confusion at the current threshold, or
    the reason they would be meaningless."""
    s, y = np.asarray(values, dtype=np.float64), np.asarray(labels, dtype=bool)
    base = Calibration(
        assertion, provider, direction, tuple(values), tuple(labels), current_threshold, errors
    )
    problem = why_not_calibratable(s, y) if len(s) else "no test produced a score (see the errors)"
    if problem is not None:
        return replace(base, problem=problem)
    fpr, tpr, _cuts = roc_curve(s, y, direction)
    current = None if current_threshold is None else confusion_at(s, y, current_threshold, direction)
    return replace(
        base,
        auc=roc_auc(s, y, direction),
        auc_interval=bootstrap_auc(s, y, direction, rounds=rounds),
        suggested=sweep(s, y, direction, precision=precision),
        current=current,
        roc=tuple(zip(fpr.tolist(), tpr.tolist(), strict=True)),
    )


def confusion_json(c: Confusion | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "threshold": c.threshold,
        "truePass": c.tp,
        "falsePass": c.fp,
        "trueFail": c.tn,
        "falseFail": c.fn,
        "accuracy": c.accuracy,
        "precision": c.precision,
        "recall": c.recall,
        "specificity": c.specificity,
        "youdenJ": c.youden_j,
    }


def _sweep_json(s: Sweep | None) -> Mapping[str, Any] | None:
    if s is None:
        return None
    return {
        "bestAccuracy": confusion_json(s.best_accuracy),
        "bestYoudenJ": confusion_json(s.best_youden),
        "targetPrecision": s.target_precision,
        "lowestAtTargetPrecision": confusion_json(s.at_precision),
    }
