"""Pass/fail judges against the labels: accuracy, the confusion matrix, Cohen's kappa with a bootstrap
interval over the labelled tests (no minimum count: with few tests the interval is wide, and it is shown),
and, when one assertion asks several judges, their agreement with each other (Fleiss' kappa).

Kappa corrects accuracy for chance: a judge that passes everything scores 90% accuracy on a set that is 90%
pass-labelled, and kappa 0. The figures come from :mod:`evalh.stats.agreement`; the confusion matrix is
:func:`~evalh.calibration.metrics.confusion_at` on the verdicts (1 pass, 0 fail, at threshold 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalh.calibration.analysis import confusion_json
from evalh.calibration.metrics import Confusion, confusion_at
from evalh.stats.agreement import cohen_kappa, cohen_kappa_interval, fleiss_kappa

__all__ = ["JudgeAgreement", "PanelAgreement", "judge_agreement", "panel_agreement"]


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge (of one assertion) against the labels."""

    assertion: str
    judge: str
    items: int
    errors: int
    confusion: Confusion | None
    kappa: float | None
    kappa_interval: tuple[float, float] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "assertion": self.assertion,
            "judge": self.judge,
            "items": self.items,
            "errors": self.errors,
            "accuracy": self.confusion.accuracy if self.confusion else None,
            "cohenKappa": self.kappa,
            "cohenKappaInterval95": list(self.kappa_interval) if self.kappa_interval else None,
            "confusion": confusion_json(self.confusion),
        }


@dataclass(frozen=True)
class PanelAgreement:
    """Several judges of one assertion with each other, over the tests every one of them judged."""

    assertion: str
    judges: tuple[str, ...]
    items: int
    fleiss_kappa: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "assertion": self.assertion,
            "judges": list(self.judges),
            "items": self.items,
            "fleissKappa": self.fleiss_kappa,
        }


def judge_agreement(
    assertion: str,
    judge: str,
    verdicts: Sequence[bool],
    labels: Sequence[bool],
    *,
    errors: int = 0,
    rounds: int = 1000,
) -> JudgeAgreement:
    """Accuracy, confusion and Cohen's kappa (with its seeded bootstrap interval) of ``verdicts``."""
    if not verdicts:
        return JudgeAgreement(assertion, judge, 0, errors, None, None, None)
    confusion = confusion_at([float(v) for v in verdicts], labels, 1.0, "higher")
    interval = cohen_kappa_interval(verdicts, labels, resamples=rounds)
    return JudgeAgreement(
        assertion, judge, len(verdicts), errors, confusion, cohen_kappa(verdicts, labels), interval
    )


def panel_agreement(assertion: str, judges: Sequence[str], rows: Sequence[Sequence[bool]]) -> PanelAgreement:
    """Fleiss' kappa of ``rows`` (one per test: each judge's verdict, in ``judges`` order)."""
    kappa = fleiss_kappa(rows) if rows else None
    return PanelAgreement(assertion, tuple(judges), len(rows), kappa)
