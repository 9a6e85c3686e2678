"""Suite aggregates: hand-computed pass rates, means, macro-F1 and the side-by-side columns."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalh.model import (
    AssertionSpec,
    GradedAssertion,
    Prompt,
    ProviderSpec,
    Status,
    Suite,
    TestCase,
    TestResult,
)
from evalh.reports.json import aggregates_to_json
from evalh.runner.aggregates import (
    classification_report,
    compute_aggregates,
    label_of,
    predicted_label,
    repeat_figures,
)
from evalh.stats.repeats import repeat_stats_by_key, suite_pass_rate_interval

PROMPTS = (Prompt(raw="Classify: {{text}}", label="classify"), Prompt(raw="Label {{text}}", label="terse"))
PROVIDERS = (ProviderSpec(id="echo"), ProviderSpec(id="openai:chat:gpt-4o-mini", label="gpt"))
GOLD = ("positive", "negative", "neutral", "positive")
ROOT = Path(__file__).resolve().parents[2]
RAG_EXAMPLE = ROOT / "examples" / "configs" / "rag.yaml"


def aggregate(rows: list[TestResult]) -> dict[str, Any]:
    """The run's aggregates as the JSON report writes them."""
    return aggregates_to_json(compute_aggregates(Suite(tests=()), rows))


def graded(kind: str, score: float, passed: bool, *, error: bool = False, **spec: Any) -> GradedAssertion:
    negate = kind.startswith("not-")
    children = spec.pop("children", ())
    return GradedAssertion(
        spec=AssertionSpec(type=kind.removeprefix("not-"), negate=negate, **spec),
        passed=passed,
        score=score,
        reason="r",
        error=error,
        children=children,
    )


def row(
    test: int,
    output: Any,
    status: Status,
    score: float,
    *,
    provider: int = 0,
    prompt: int = 0,
    assertions: tuple[GradedAssertion, ...] = (),
    named: dict[str, float] | None = None,
    label: Any = None,
) -> TestResult:
    metadata = {"label": label} if label is not None else {}
    return TestResult(
        test=TestCase(index=test, metadata=metadata),
        prompt=PROMPTS[prompt],
        provider=PROVIDERS[provider],
        prompt_index=prompt,
        provider_index=provider,
        rendered_prompt="",
        status=status,
        score=score,
        reason="",
        output=output,
        assertions=assertions,
        named_scores=named or {},
    )


def classification_rows() -> list[TestResult]:
    """Provider 0 answers plainly; provider 1 answers in JSON, off-list, or not at all (an ERROR)."""
    plain = ["Positive", "negative.", "positive", " Positive\n"]
    other: list[Any] = ["I think positive", None, '{"label": "Neutral"}', {"label": "POSITIVE"}]
    rows = []
    for index, (gold, answer) in enumerate(zip(GOLD, plain, strict=True)):
        passed = label_of(answer) == gold
        status = Status.PASS if passed else Status.FAIL
        rows.append(row(index, answer, status, float(passed), label=gold, named={"accuracy": float(passed)}))
    for index, (gold, answer) in enumerate(zip(GOLD, other, strict=True)):
        if answer is None:
            rows.append(row(index, None, Status.ERROR, 0.0, provider=1, label=gold))
            continue
        passed = predicted_label(answer) == gold
        status = Status.PASS if passed else Status.FAIL
        rows.append(
            row(
                index,
                answer,
                status,
                float(passed),
                provider=1,
                label=gold,
                named={"accuracy": float(passed)},
            )
        )
    return rows


def test_macro_f1_hand_computed() -> None:
    aggregates = aggregate(classification_rows())
    first, second = aggregates["classification"]
    # provider 0 predicts pos, neg, pos, pos: negative F1 1, neutral F1 0, positive P 2/3 R 1 -> F1 0.8
    assert first["provider"] == "echo" and first["rows"] == 4
    assert first["perClass"]["positive"] == pytest.approx(
        {"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2}
    )
    assert first["perClass"]["neutral"]["f1"] == 0.0
    assert first["macroF1"] == pytest.approx((1 + 0 + 0.8) / 3)
    assert first["accuracy"] == 0.75
    assert first["unknownPredictions"] == 0
    # provider 1: off-list answer, no answer (ERROR), neutral (JSON text), positive (JSON object)
    assert second["provider"] == "gpt"
    assert second["perClass"]["negative"]["f1"] == 0.0
    assert second["perClass"]["neutral"]["f1"] == 1.0
    assert second["perClass"]["positive"]["f1"] == pytest.approx(2 / 3)
    assert second["macroF1"] == pytest.approx((0 + 1 + 2 / 3) / 3)
    assert second["accuracy"] == 0.5
    assert second["unknownPredictions"] == 2
    columns = aggregates["columns"]
    assert [column["macroF1"] for column in columns] == [first["macroF1"], second["macroF1"]]


def test_pass_rate_means_and_counts() -> None:
    aggregates = aggregate(classification_rows())
    assert aggregates["counts"] == {"rows": 8, "passed": 5, "failed": 2, "errors": 1}
    assert aggregates["passRate"] == pytest.approx(100 * 5 / 8)
    assert aggregates["meanScore"] == pytest.approx(5 / 7)  # the ERROR row is left out of means
    assert aggregates["namedScores"]["accuracy"] == pytest.approx(
        {"mean": 5 / 7, "min": 0.0, "max": 1.0, "count": 7}
    )
    echo, gpt = aggregates["columns"]
    assert echo.pop("namedScores") == {"accuracy": 0.75}
    assert echo == pytest.approx(
        {
            "provider": "echo",
            "prompt": "classify",
            "providerIndex": 0,
            "promptIndex": 0,
            "rows": 4,
            "passed": 3,
            "failed": 1,
            "errors": 0,
            "passRate": 75.0,
            "meanScore": 0.75,
            "macroF1": (1 + 0 + 0.8) / 3,
            "accuracy": 0.75,
        }
    )
    assert gpt["errors"] == 1 and gpt["passRate"] == 50.0 and gpt["meanScore"] == pytest.approx(2 / 3)


def test_assertion_types_flatten_sets_and_keep_negations_apart() -> None:
    child_ok = graded("contains", 1.0, True, value="a")
    child_bad = graded("not-contains", 0.0, False, value="b")
    rows = [
        row(
            0,
            "x",
            Status.FAIL,
            0.5,
            assertions=(graded("assert-set", 0.5, False, children=(child_ok, child_bad)),),
        ),
        row(
            1, "y", Status.PASS, 1.0, assertions=(graded("contains", 1.0, True), graded("rouge-n", 0.8, True))
        ),
        row(2, "z", Status.ERROR, 0.0, assertions=(graded("rouge-n", 0.0, False, error=True),)),
    ]
    types = aggregate(rows)["assertionTypes"]
    assert list(types) == ["assert-set", "contains", "not-contains", "rouge-n"]
    assert types["contains"] == {"count": 2, "passed": 2, "errors": 0, "passRate": 100.0, "meanScore": 1.0}
    assert types["not-contains"]["meanScore"] == 0.0 and types["not-contains"]["passRate"] == 0.0
    assert types["rouge-n"] == {"count": 2, "passed": 1, "errors": 1, "passRate": 50.0, "meanScore": 0.8}


def test_columns_are_ordered_by_provider_then_prompt() -> None:
    rows = [
        row(0, "a", Status.PASS, 1.0, provider=1, prompt=1),
        row(0, "a", Status.FAIL, 0.0, provider=0, prompt=1),
        row(0, "a", Status.PASS, 1.0, provider=1, prompt=0),
        row(0, "a", Status.PASS, 0.5, provider=0, prompt=0, named={"m": 0.5}),
        row(1, "b", Status.PASS, 1.0, provider=0, prompt=0, named={"m": 1.0}),
    ]
    columns = aggregate(rows)["columns"]
    assert [(c["providerIndex"], c["promptIndex"]) for c in columns] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [(c["provider"], c["prompt"]) for c in columns][1:3] == [("echo", "terse"), ("gpt", "classify")]
    assert columns[0]["namedScores"] == {"m": 0.75} and columns[0]["meanScore"] == 0.75
    assert columns[1]["namedScores"] == {}
    assert "macroF1" not in columns[0]  # no labelled test: no classification figures
    assert aggregate(rows)["classification"] == []


def test_empty_run() -> None:
    aggregates = aggregate([])
    assert aggregates == {
        "passRate": 100.0,
        "meanScore": None,
        "counts": {"rows": 0, "passed": 0, "failed": 0, "errors": 0},
        "namedScores": {},
        "assertionTypes": {},
        "columns": [],
        "classification": [],
    }


def test_aggregates_are_json_and_order_independent() -> None:
    rows = classification_rows()
    aggregates = aggregate(rows)
    assert json.loads(json.dumps(aggregates, allow_nan=False)) == aggregates
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert aggregate(shuffled) == aggregates


def test_label_reading() -> None:
    assert label_of(" 'Urgent!' ") == "urgent"
    assert label_of(3.0) == "3" and label_of(True) == "true"
    assert label_of("   ") is None and label_of(None) is None and label_of({"a": 1}) is None
    assert predicted_label('{"label": "Spam", "why": "links"}') == "spam"
    assert predicted_label('{"category": "spam"}') is None  # a JSON object without a label field
    assert predicted_label("[1, 2]") == "[1, 2]"
    assert predicted_label(7) == "7"
    assert predicted_label("Ça va.") == "ça va"
    assert label_of("E\u0301leve\u0301") == label_of("élevé") == "élevé"


def test_numeric_and_unicode_labels() -> None:
    rows = [
        row(0, "1", Status.PASS, 1.0, label=1),
        row(1, "2", Status.FAIL, 0.0, label=1),
        row(2, "Élevé", Status.PASS, 1.0, label="élevé"),
    ]
    report = aggregate(rows)["classification"][0]
    assert set(report["perClass"]) == {"1", "élevé"}
    assert report["perClass"]["1"]["recall"] == 0.5 and report["perClass"]["1"]["precision"] == 1.0
    assert report["unknownPredictions"] == 1


def _confusion_macro_f1(pairs: list[tuple[str, str | None]]) -> float:
    """Macro-F1 from a confusion matrix, as F1 = 2TP / (2TP + FP + FN): an independent formulation."""
    labels = sorted({gold for gold, _ in pairs})
    scores = []
    for label in labels:
        tp = sum(1 for g, p in pairs if g == label and p == label)
        fp = sum(1 for g, p in pairs if g != label and p == label)
        fn = sum(1 for g, p in pairs if g == label and p != label)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / len(scores)


def test_macro_f1_agrees_with_the_confusion_matrix_formula() -> None:
    rng = random.Random(5)
    for _ in range(200):
        labels = ["a", "b", "c", "d"][: rng.randint(1, 4)]
        pairs = [(rng.choice(labels), rng.choice([*labels, "zzz", None])) for _ in range(rng.randint(1, 20))]
        assert classification_report(pairs)["macroF1"] == pytest.approx(_confusion_macro_f1(pairs))


def test_macro_f1_matches_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(8)
    for _ in range(50):
        labels = ["a", "b", "c"]
        pairs = [(rng.choice(labels), rng.choice([*labels, "other"])) for _ in range(rng.randint(1, 15))]
        gold = sorted({g for g, _ in pairs})
        expected = metrics.f1_score(
            [g for g, _ in pairs], [p for _, p in pairs], labels=gold, average="macro", zero_division=0
        )
        assert classification_report(pairs)["macroF1"] == pytest.approx(expected)


def test_rag_example_runs_offline_with_its_aggregates(tmp_path: Path) -> None:
    """examples/configs/rag.yaml end to end: recorded outputs, the bundled model, the JSON report."""
    report = tmp_path / "rag.json"
    completed = subprocess.run(
        [sys.executable, "-m", "evalh", "run", str(RAG_EXAMPLE), "-o", str(report), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    aggregates = json.loads(report.read_text(encoding="utf-8"))["results"]["aggregates"]
    assert aggregates["counts"] == {"rows": 3, "passed": 3, "failed": 0, "errors": 0}
    assert aggregates["namedScores"]["grounding"]["mean"] == 1.0
    # retrieval: test 1 (hit 1, MRR 1), test 2 (nDCG@3 of doc-1 (gain 1) then doc-2 (gain 2), recall 1,
    # precision 1), test 3 (hit 1, MRR 1)
    ndcg = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    expected = (1.0 + (ndcg + 1 + 1) / 3 + 1.0) / 3
    assert aggregates["namedScores"]["retrieval"]["mean"] == pytest.approx(expected)
    assert aggregates["assertionTypes"]["retrieval-ndcg-at-k"]["meanScore"] == pytest.approx(ndcg)
    assert aggregates["assertionTypes"]["citation-groundedness"]["count"] == 3
    assert aggregates["assertionTypes"]["similar"]["passed"] == 2
    assert len(aggregates["columns"]) == 1 and aggregates["classification"] == []


def test_aggregates_satisfy_the_report_schema() -> None:
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class({"$defs": schema["$defs"], "$ref": "#/$defs/aggregates"})
    for rows in (classification_rows(), []):
        document = json.loads(json.dumps(aggregate(rows)))
        assert [error.message for error in validator.iter_errors(document)] == []


def _general_pass_rate_interval(rows: list[TestResult]) -> tuple[float, float]:
    """The suite's pass rate interval by the general path: every test's repeat figures first."""
    by_cell = repeat_stats_by_key(
        ((r.test.index, r.prompt_index, r.provider_index), r.status is Status.PASS, r.score) for r in rows
    )
    return suite_pass_rate_interval([(stats.passes, stats.runs) for stats in by_cell.values()])


def test_one_row_per_test_gives_the_pass_rate_interval_of_the_general_path() -> None:
    """With one row per test, repeat_figures skips the per-test figures: its interval is still the
    general path's, whatever the statuses; a test that has two rows (same cell) takes the general path."""
    rng = random.Random(29)
    statuses = (Status.PASS, Status.FAIL, Status.ERROR)
    for size in (0, 1, 2, 7, 40, 300):
        rows = [
            row(
                index // 3,
                "",
                rng.choice(statuses),
                rng.random(),
                provider=index % 2,
                prompt=rng.randint(0, 1),
            )
            for index in range(size)
        ]
        unique = {(r.test.index, r.prompt_index, r.provider_index): r for r in rows}
        for chosen in (list(unique.values()), rows):
            interval, repeats = repeat_figures(chosen)
            assert repeats is None
            assert interval == _general_pass_rate_interval(chosen)


def test_nested_sets_count_every_assertion_once_at_any_depth() -> None:
    inner = graded(
        "assert-set", 1.0, True, children=(graded("equals", 1.0, True), graded("contains", 0.0, False))
    )
    outer = graded("assert-set", 0.5, False, children=(graded("contains", 1.0, True), inner))
    rows = [
        row(
            0,
            "x",
            Status.FAIL,
            0.5,
            assertions=(graded("contains", 1.0, True), outer, graded("equals", 0.0, False)),
        ),
        row(1, "y", Status.PASS, 1.0, assertions=(graded("contains", 1.0, True),)),
    ]
    figures = aggregate(rows)
    types = figures["assertionTypes"]
    assert {name: (kind["count"], kind["passed"]) for name, kind in types.items()} == {
        "assert-set": (2, 1),
        "contains": (4, 3),
        "equals": (2, 1),
    }
    column = compute_aggregates(Suite(tests=()), rows).columns[0]
    assert (column.assertions_passed, column.assertions_failed) == (5, 3)


def _naive_figures(
    rows: list[TestResult],
) -> tuple[dict[str, tuple[int, int, int, float | None]], dict[tuple[int, int], tuple[int, int]]]:
    """Each type's figures and each column's passed/failed assertions, counted the plain way: every
    graded assertion flattened (children after their set), the skipped ones left out."""

    def flat(items: tuple[GradedAssertion, ...]) -> list[GradedAssertion]:
        return [found for item in items for found in (item, *flat(item.children))]

    types: dict[str, list[GradedAssertion]] = {}
    columns: dict[tuple[int, int], tuple[int, int]] = {}
    for each in rows:
        applied = [item for item in flat(each.assertions) if not item.skipped]
        for item in applied:
            types.setdefault(item.spec.full_type, []).append(item)
        passed = sum(item.passed for item in applied)
        key = (each.provider_index, each.prompt_index)
        before = columns.get(key, (0, 0))
        columns[key] = (before[0] + passed, before[1] + len(applied) - passed)
    figures = {}
    for name in sorted(types):
        ran = [item for item in types[name] if not item.error]
        passed = sum(item.passed for item in ran)
        mean = sum(item.score for item in ran) / len(ran) if ran else None
        figures[name] = (len(types[name]), passed, len(types[name]) - len(ran), mean)
    return figures, columns


def _random_graded(rng: random.Random, depth: int = 0) -> GradedAssertion:
    kind = rng.choice(("contains", "not-contains", "equals", "rouge-n", "assert-set"))
    if kind == "assert-set" and depth < 2:
        children = tuple(_random_graded(rng, depth + 1) for _ in range(rng.randint(1, 3)))
        return graded(kind, rng.random(), rng.random() < 0.5, children=children)
    item = graded(kind.replace("assert-set", "icontains"), rng.random(), rng.random() < 0.6)
    if rng.random() < 0.1:
        return GradedAssertion(spec=item.spec, passed=True, score=0.0, reason="skipped", skipped=True)
    if rng.random() < 0.1:
        return GradedAssertion(spec=item.spec, passed=False, score=0.0, reason="boom", error=True)
    return item


def test_random_rows_tally_types_and_columns_as_the_plain_count() -> None:
    """One pass tallies the types and each column's assertions: the same figures as counting each
    the plain way, on random rows (sets nested two deep, skipped and errored assertions, two
    providers x two prompts, rows in any order)."""
    rng = random.Random(2905)
    for _ in range(60):
        rows = [
            row(
                index,
                "x",
                rng.choice(tuple(Status)),
                rng.random(),
                provider=rng.randint(0, 1),
                prompt=rng.randint(0, 1),
                assertions=tuple(_random_graded(rng) for _ in range(rng.randint(0, 5))),
            )
            for index in range(rng.randint(1, 12))
        ]
        figures, columns = _naive_figures(rows)
        counted = compute_aggregates(Suite(tests=()), rows)
        assert list(counted.assertion_types) == list(figures)  # sorted by type
        assert {
            name: (kind.count, kind.passed, kind.errors, kind.mean_score)
            for name, kind in counted.assertion_types.items()
        } == figures  # the mean: the same sum, in row order
        assert {
            (column.provider_index, column.prompt_index): (column.assertions_passed, column.assertions_failed)
            for column in counted.columns
        } == columns
