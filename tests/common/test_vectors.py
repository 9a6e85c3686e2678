"""evalh.common.vectors: the metrics equal numpy's on the same vectors, and bad inputs are named, not NaN."""

from __future__ import annotations

import importlib
import math
from types import ModuleType

import numpy as np
import pytest

from evalh.common.vectors import (
    Deferred,
    compare,
    cosine,
    dot,
    euclidean,
    fit_rows,
    greedy_match,
    matrix_problem,
    vector_problem,
)


@pytest.fixture
def pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    generator = np.random.default_rng(7)
    return [
        (generator.normal(size=dim).astype(np.float32), generator.normal(size=dim).astype(np.float32))
        for dim in (3, 64, 384, 1536)
    ]


def test_metrics_equal_numpy(pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    for a, b in pairs:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        expected_cosine = a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64))
        assert cosine(a, b) == pytest.approx(expected_cosine, abs=1e-6)
        assert dot(a, b) == pytest.approx(float(a64 @ b64), abs=1e-6)
        assert euclidean(a, b) == pytest.approx(float(np.linalg.norm(a64 - b64)), abs=1e-6)
        assert compare("cosine", a, b) == cosine(a, b)
        assert compare("euclidean", a, b) == euclidean(a, b)


def test_cosine_is_numpys_formula_to_the_last_bit(pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    # cosine skips np.linalg.norm's wrapper (a hot path); the value must not move, thresholds sit on it
    for a, b in pairs:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        expected = float(np.dot(a64, b64) / (np.linalg.norm(a64) * np.linalg.norm(b64)))
        assert cosine(a, b) == max(-1.0, min(1.0, expected))


def test_a_deferred_module_is_imported_once_then_read_as_plain_attributes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    imports: list[str] = []
    real_import = importlib.import_module

    def counting_import(name: str, package: str | None = None) -> ModuleType:
        imports.append(name)
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", counting_import)
    deferred = Deferred("math")
    assert deferred.sqrt(16.0) == 4.0
    assert deferred.sqrt(9.0) == 3.0 and deferred.pi == math.pi
    assert imports == ["math", "math"]  # one lookup per attribute, the first time it is read


def test_cosine_of_identical_and_opposite_vectors_is_exactly_bounded() -> None:
    vector = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    assert cosine(vector, vector) == pytest.approx(1.0, abs=1e-12)
    assert cosine(vector, -vector) == pytest.approx(-1.0, abs=1e-12)
    assert -1.0 <= cosine(vector, vector * 3) <= 1.0


def test_zero_vector_and_dimension_mismatch_are_named() -> None:
    a = np.ones(4, dtype=np.float32)
    assert vector_problem(a, np.zeros(4, dtype=np.float32), b_name="the value") == (
        "the embedding of the value is a zero vector"
    )
    problem = vector_problem(a, np.ones(3, dtype=np.float32), a_name="the output", b_name="the value")
    assert problem == "dimension mismatch: the output has 4 dimensions, the value has 3"
    assert "non-finite" in (vector_problem(a, np.array([1, np.nan, 0, 0], dtype=np.float32)) or "")
    assert vector_problem(a, a) is None


def test_matrix_problem_names_the_row() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert matrix_problem(rows, ["word 'a'", "word 'b'"]) == "the embedding of word 'b' is a zero vector"
    assert matrix_problem(np.eye(2), ["x", "y"]) is None


def test_greedy_match_is_bertscore() -> None:
    generator = np.random.default_rng(3)
    candidate = generator.normal(size=(5, 8))
    reference = generator.normal(size=(7, 8))
    match = greedy_match(candidate, reference)
    c = candidate / np.linalg.norm(candidate, axis=1, keepdims=True)
    r = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    sims = c @ r.T
    assert match.precision == pytest.approx(sims.max(axis=1).mean())
    assert match.recall == pytest.approx(sims.max(axis=0).mean())
    p, rec = match.precision, match.recall
    assert match.f1 == pytest.approx(2 * p * rec / (p + rec))
    assert match.candidate_best == tuple(int(i) for i in sims.argmax(axis=1))
    assert match.reference_best == tuple(int(i) for i in sims.argmax(axis=0))


def test_greedy_match_weights_tokens() -> None:
    candidate = np.array([[1.0, 0.0], [0.0, 1.0]])
    reference = np.array([[1.0, 0.0], [1.0, 1.0]])
    plain = greedy_match(candidate, reference)
    weighted = greedy_match(candidate, reference, np.array([1.0, 0.0]), np.array([1.0, 1.0]))
    # candidate token 0 matches perfectly; weighting away token 1 leaves precision 1.
    assert weighted.precision == pytest.approx(1.0)
    assert plain.precision == pytest.approx((1.0 + np.sqrt(0.5)) / 2)
    # all-zero weights fall back to the plain mean instead of dividing by zero
    assert greedy_match(candidate, reference, np.zeros(2), np.zeros(2)).f1 == pytest.approx(plain.f1)


def test_fit_rows_agrees_with_vector_problem_one_vector_at_a_time() -> None:
    rows = [np.array(v, dtype=np.float32) for v in ([1.0, 2.0], [0.0, 0.0], [np.nan, 1.0], [np.inf, 0.0])]
    assert fit_rows(rows) == [vector_problem(row, row) is None for row in rows] == [True, False, False, False]
    assert fit_rows([np.array([1.0]), np.array([1.0, 2.0])]) == [False, False]  # unequal: each pair checks
    assert fit_rows([np.zeros(0), np.zeros(0)]) == [False, False] and fit_rows([]) == []
