"""Vector maths for semantic scoring, in one place: cosine, dot, euclidean and greedy token matching.

Every function computes in float64 and checks its inputs first: a zero vector, a dimension mismatch or
a non-finite value is reported as a problem text (:func:`vector_problem`), never turned into NaN.
A leaf module beside ``model``: it imports nothing of evalh.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any


class Deferred:
    """A module imported on first attribute access. numpy costs about 0.4 s to import, and the modules
    that declare assertion types import this one: ``evalh validate`` and ``evalh list`` never load it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)
        value = getattr(module, attribute)
        # kept on this object, so the next read is a plain attribute: scoring reads np.* a dozen times
        # per row, and an import_module lookup each time was 0.2 s of a 5,000-row similar run
        setattr(self, attribute, value)
        return value


if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.floating[Any]]
else:
    np = Deferred("numpy")

__all__ = [
    "Deferred",
    "GreedyMatch",
    "compare",
    "cosine",
    "dot",
    "euclidean",
    "fit_rows",
    "greedy_match",
    "matrix_problem",
    "unit_rows",
    "vector_problem",
]


def vector_problem(a: FloatArray, b: FloatArray, *, a_name: str = "a", b_name: str = "b") -> str | None:
    """Why ``a`` and ``b`` cannot be compared, or None if they can."""
    if a.ndim != 1 or b.ndim != 1:
        return f"expected two vectors, got arrays of shape {a.shape} and {b.shape}"
    if a.shape[0] != b.shape[0]:
        return f"dimension mismatch: {a_name} has {a.shape[0]} dimensions, {b_name} has {b.shape[0]}"
    for name, vector in ((a_name, a), (b_name, b)):
        if vector.shape[0] == 0:
            return f"the embedding of {name} is empty"
        # the array methods, not np.all / np.any: their Python wrappers cost more than the check on
        # an embedding's few hundred values, and this runs for every scored pair
        if not np.isfinite(vector).all():
            return f"the embedding of {name} holds a non-finite value"
        if not vector.any():
            return f"the embedding of {name} is a zero vector"
    return None


def fit_rows(vectors: Sequence[FloatArray]) -> list[bool]:
    """For each of ``vectors`` (one fetched batch), whether it passes :func:`vector_problem`'s checks of
    one vector: one-dimensional, non-empty, finite and not all zero; checked in one step for the batch
    rather than for every pair scored. Vectors of unequal lengths are all reported unfit (each pair
    then goes through :func:`vector_problem`, which names the mismatch)."""
    if not vectors or any(vector.ndim != 1 or vector.shape != vectors[0].shape for vector in vectors):
        return [False] * len(vectors)
    matrix = np.stack(vectors)
    if matrix.shape[1] == 0:
        return [False] * len(vectors)
    fit = np.logical_and(np.all(np.isfinite(matrix), axis=1), np.any(matrix, axis=1))
    return [bool(ok) for ok in fit]


def _norm(vector: FloatArray) -> float:
    """np.linalg.norm of a float64 vector (the square root of its dot with itself), without the
    wrapper's cost: the same float, bit for bit."""
    return math.sqrt(float(np.dot(vector, vector)))


def cosine(a: FloatArray, b: FloatArray) -> float:
    """Cosine similarity in [-1, 1]. The caller has checked :func:`vector_problem`."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    value = float(np.dot(a64, b64)) / (_norm(a64) * _norm(b64))
    return max(-1.0, min(1.0, value))


def dot(a: FloatArray, b: FloatArray) -> float:
    """The dot product (unbounded)."""
    return float(np.dot(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)))


def euclidean(a: FloatArray, b: FloatArray) -> float:
    """The Euclidean distance (>= 0)."""
    return float(np.linalg.norm(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)))


_METRIC_FUNCTIONS = {"cosine": cosine, "dot": dot, "euclidean": euclidean}


def compare(metric: str, a: FloatArray, b: FloatArray) -> float:
    """``metric`` ("cosine", "dot" or "euclidean") of two checked vectors; raises KeyError if unknown.

    The result may still be non-finite (an overflowing dot product): callers check ``math.isfinite``.
    """
    return _METRIC_FUNCTIONS[metric](a, b)


def matrix_problem(vectors: FloatArray, names: Sequence[str]) -> str | None:
    """Why the rows of a 2-D array cannot be compared (a zero row, a non-finite value), or None."""
    if vectors.ndim != 2:
        return f"expected a 2-D array of vectors, got shape {vectors.shape}"
    for row, name in zip(vectors, names, strict=False):
        if not np.all(np.isfinite(row)):
            return f"the embedding of {name} holds a non-finite value"
        if not np.any(row):
            return f"the embedding of {name} is a zero vector"
    return None


def unit_rows(vectors: FloatArray) -> FloatArray:
    """Rows scaled to unit length (float64); zero rows stay zero."""
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: FloatArray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return result


@dataclass(frozen=True)
class GreedyMatch:
    """BERTScore-style greedy matching of candidate tokens to reference tokens.

    ``candidate_best[i]`` is the reference row closest to candidate row ``i`` (cosine
    ``candidate_sim[i]``), and the other way round for ``reference_best``.
    """

    precision: float
    recall: float
    f1: float
    candidate_best: tuple[int, ...]
    candidate_sim: tuple[float, ...]
    reference_best: tuple[int, ...]
    reference_sim: tuple[float, ...]


def _weighted_mean(values: FloatArray, weights: FloatArray | None) -> float:
    if weights is None or float(np.sum(weights)) <= 0.0:
        return float(np.mean(values))
    return float(np.sum(values * weights) / np.sum(weights))


def greedy_match(
    candidate: FloatArray,
    reference: FloatArray,
    candidate_weights: FloatArray | None = None,
    reference_weights: FloatArray | None = None,
) -> GreedyMatch:
    """Match every token to its most similar token on the other side (cosine), as BERTScore does.

    Precision averages the candidate tokens' best similarities, recall the reference tokens'; both are
    weighted (idf) when weights are given and not all zero. F1 is their harmonic mean (0 if both are 0).
    Both sides must have at least one row.
    """
    sims = unit_rows(candidate) @ unit_rows(reference).T
    candidate_best = np.argmax(sims, axis=1)
    reference_best = np.argmax(sims, axis=0)
    candidate_sim = sims[np.arange(sims.shape[0]), candidate_best]
    reference_sim = sims[reference_best, np.arange(sims.shape[1])]
    precision = _weighted_mean(candidate_sim, candidate_weights)
    recall = _weighted_mean(reference_sim, reference_weights)
    total = precision + recall
    f1 = 2 * precision * recall / total if total > 0 else 0.0
    return GreedyMatch(
        precision=precision,
        recall=recall,
        f1=f1,
        candidate_best=tuple(int(i) for i in candidate_best),
        candidate_sim=tuple(float(s) for s in candidate_sim),
        reference_best=tuple(int(i) for i in reference_best),
        reference_sim=tuple(float(s) for s in reference_sim),
    )
