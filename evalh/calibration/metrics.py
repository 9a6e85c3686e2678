"""The math of calibration on numpy arrays: ROC AUC (Mann-Whitney U, ties counted half), a bootstrap
interval with a fixed seed, the ROC curve and the threshold sweeps. Pass or fail at a threshold is the
run's own comparison (``runner/scoring.meets``).

Every function takes ``scores`` and boolean ``labels`` (True: the test should pass) and a ``direction``:
"higher" (a similarity: a score at or above the threshold passes) or "lower" (a distance: at or below).
Scores of a "lower" type are negated internally, so one sweep serves both, and thresholds come back in
the type's own units. A threshold is always one of the observed scores: predicted pass is
``score >= t`` (higher) or ``score <= t`` (lower), the comparison ``runner/scoring.py`` makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from evalh.model.thresholds import meets

__all__ = [
    "Confusion",
    "Sweep",
    "bootstrap_auc",
    "confusion_at",
    "roc_auc",
    "roc_curve",
    "sweep",
    "why_not_calibratable",
]

Direction = Literal["higher", "lower"]
FloatArray = npt.NDArray[np.float64]

# Below this many tests of either label, a threshold fitted to them says more about the sample than
# about the model (the "about 10 per class").
MIN_PER_CLASS = 10


def _oriented(scores: FloatArray, direction: Direction) -> FloatArray:
    """Scores where higher means "more likely to pass", whatever the type's direction."""
    return -scores if direction == "lower" else scores


def roc_auc(scores: npt.ArrayLike, labels: npt.ArrayLike, direction: Direction = "higher") -> float:
    """P(a pass-labelled score ranks better than a fail-labelled one), ties counting 1/2: the
    Mann-Whitney U statistic over n_pass * n_fail, which equals the area under the ROC curve."""
    s = _oriented(np.asarray(scores, dtype=np.float64), direction)
    y = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("AUC needs both labels")
    ranks = _average_ranks(s)
    u = float(ranks[y].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def _average_ranks(values: FloatArray) -> FloatArray:
    """1-based ranks, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2  # mean of start+1 .. end
    return ranks


def bootstrap_auc(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    direction: Direction = "higher",
    *,
    rounds: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval of the AUC, resampling within each label (stratified, so every
    resample has both), with a fixed seed: the same data always gives the same interval."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    rng = np.random.default_rng(seed)
    aucs = np.empty(rounds, dtype=np.float64)
    both = np.r_[np.ones(len(pos), dtype=bool), np.zeros(len(neg), dtype=bool)]
    for i in range(rounds):
        sample = np.r_[rng.choice(pos, len(pos)), rng.choice(neg, len(neg))]
        aucs[i] = roc_auc(sample, both, direction)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(aucs, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Confusion:
    """Counts at one threshold; "positive" is a predicted (or labelled) pass."""

    threshold: float
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def accuracy(self) -> float:
        total = self.tp + self.fp + self.tn + self.fn
        return (self.tp + self.tn) / total if total else 0.0

    @property
    def precision(self) -> float | None:
        predicted = self.tp + self.fp
        return self.tp / predicted if predicted else None

    @property
    def recall(self) -> float:
        actual = self.tp + self.fn
        return self.tp / actual if actual else 0.0

    @property
    def specificity(self) -> float:
        actual = self.tn + self.fp
        return self.tn / actual if actual else 0.0

    @property
    def youden_j(self) -> float:
        return self.recall + self.specificity - 1


def confusion_at(
    scores: npt.ArrayLike, labels: npt.ArrayLike, threshold: float, direction: Direction = "higher"
) -> Confusion:
    """The confusion matrix when ``threshold`` decides (inclusive, as runner/scoring.py compares)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    # the run's own comparison (one home for it, tolerance included), so the matrix at the current
    # threshold counts exactly the passes `evalh run` gave
    passes = np.fromiter((meets(float(v), threshold, direction) for v in s), dtype=bool, count=len(s))
    return Confusion(
        threshold=float(threshold),
        tp=int((passes & y).sum()),
        fp=int((passes & ~y).sum()),
        tn=int((~passes & ~y).sum()),
        fn=int((~passes & y).sum()),
    )


def roc_curve(
    scores: npt.ArrayLike, labels: npt.ArrayLike, direction: Direction = "higher"
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(false positive rates, true positive rates, thresholds), from the strictest threshold (nothing
    passes, a leading +-inf) to the most lenient (everything passes)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    o = _oriented(s, direction)
    cuts = np.unique(o)[::-1]
    tpr = np.array([0.0] + [float((o[y] >= c).mean()) for c in cuts])
    fpr = np.array([0.0] + [float((o[~y] >= c).mean()) for c in cuts])
    back = -cuts if direction == "lower" else cuts
    first = -np.inf if direction == "lower" else np.inf
    return fpr, tpr, np.r_[first, back]


@dataclass(frozen=True)
class Sweep:
    """The suggested thresholds: best accuracy, best Youden's J, and the most lenient one whose
    precision reaches the target (None when no threshold does). Ties go to the stricter threshold."""

    best_accuracy: Confusion
    best_youden: Confusion
    at_precision: Confusion | None
    target_precision: float


def sweep(
    scores: npt.ArrayLike, labels: npt.ArrayLike, direction: Direction = "higher", *, precision: float = 0.95
) -> Sweep:
    """Try every observed score as the threshold, strictest first (so ties keep the stricter one)."""
    s = np.asarray(scores, dtype=np.float64)
    cuts = np.unique(s)
    strictest_first = cuts if direction == "lower" else cuts[::-1]
    rows = [confusion_at(s, labels, float(t), direction) for t in strictest_first]
    best_acc = max(rows, key=lambda c: c.accuracy)  # max() keeps the first of equals: the strictest
    best_j = max(rows, key=lambda c: c.youden_j)
    # "the lowest (most lenient) threshold that reaches the target precision": the last qualifying one
    reaching = [c for c in rows if c.precision is not None and c.precision >= precision - 1e-12]
    return Sweep(best_acc, best_j, reaching[-1] if reaching else None, precision)


def why_not_calibratable(scores: npt.ArrayLike, labels: npt.ArrayLike) -> str | None:
    """Why a threshold fitted to these scores would be meaningless, or None when it is not."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        which = "pass" if n_neg == 0 else "fail"
        return f"every labelled test is '{which}': a threshold needs examples of both labels"
    if len(np.unique(s)) == 1:
        return f"every test scored the same ({s[0]:g}): no threshold separates anything"
    if min(n_pos, n_neg) < MIN_PER_CLASS:
        return (
            f"too few labels ({n_pos} pass, {n_neg} fail): label at least {MIN_PER_CLASS} tests of each "
            "kind before trusting a threshold"
        )
    return None
