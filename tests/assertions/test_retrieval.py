"""Retrieval-ranking metrics: hand-computed cases, edge cases, and agreement with trec_eval (pytrec_eval)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from typing import Any

import pytest

from evalh.assertions.registry import get_assertion
from evalh.assertions.retrieval import contains_answer
from evalh.model import AssertionResult
from tests.assertions.helpers import declared_problems, grade, make_context

RANKED = ["d3", "d1", "d7", "d2", "d9"]
RELEVANT = ["d1", "d2", "d5"]
RANKING_TYPES = (
    "retrieval-hit-at-k",
    "retrieval-recall-at-k",
    "retrieval-precision-at-k",
    "retrieval-mrr",
    "retrieval-ndcg-at-k",
)


def run(
    kind: str,
    output: Any,
    value: Any,
    config: Mapping[str, Any] | None = None,
    threshold: float | None = None,
    vars: Mapping[str, Any] | None = None,
) -> AssertionResult:
    if not isinstance(output, str):
        output = json.dumps(output)
    ctx = make_context(kind, value=value, output=output, threshold=threshold, config=config, vars=vars)
    return grade(ctx)


# ------------------------------------------------------------------------------- hand-computed


def test_binary_relevance_at_3() -> None:
    k3 = {"k": 3}
    hit = run("retrieval-hit-at-k", RANKED, RELEVANT, k3)
    assert hit.passed and hit.score == 1.0
    assert hit.reason == "Relevant id 'd1' is at rank 2 of the top 3"
    recall = run("retrieval-recall-at-k", RANKED, RELEVANT, k3)
    assert recall.score == pytest.approx(1 / 3) and not recall.passed
    assert recall.reason == "Recall@3 0.3333 is less than threshold 1 (1 of 3 relevant ids found)"
    assert recall.details["relevant_found"] == ["d1"]
    assert recall.details["relevant_missing"] == ["d2", "d5"]
    precision = run("retrieval-precision-at-k", RANKED, RELEVANT, k3)
    assert precision.score == pytest.approx(1 / 3)
    mrr = run("retrieval-mrr", RANKED, RELEVANT, k3)
    assert mrr.score == 0.5 and mrr.passed
    assert mrr.reason.endswith("(first relevant id at rank 2)")
    ndcg = run("retrieval-ndcg-at-k", RANKED, RELEVANT, k3)
    # DCG = 1/log2(3); ideal = 1 + 1/log2(3) + 1/log2(4)
    assert ndcg.score == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3) + 0.5))


def test_without_k_the_whole_list_counts() -> None:
    recall = run("retrieval-recall-at-k", RANKED, RELEVANT)
    assert recall.score == pytest.approx(2 / 3)
    assert recall.details["k"] == 5 and recall.details["hit_ranks"] == [2, 4]
    assert run("retrieval-precision-at-k", RANKED, RELEVANT).score == pytest.approx(2 / 5)


def test_graded_ndcg() -> None:
    gains = {"d1": 3, "d2": 1, "d3": 2}
    result = run("retrieval-ndcg-at-k", ["d3", "d1", "x", "d2"], gains, {"k": 4})
    dcg = 2 + 3 / math.log2(3) + 1 / math.log2(5)
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    assert result.details["dcg"] == pytest.approx(dcg)
    assert result.details["idcg"] == pytest.approx(idcg)
    assert result.score == pytest.approx(dcg / idcg) and result.passed
    exponential = run("retrieval-ndcg-at-k", ["d3", "d1", "x", "d2"], gains, {"k": 4, "gain": "exponential"})
    dcg = 3 + 7 / math.log2(3) + 1 / math.log2(5)
    idcg = 7 + 3 / math.log2(3) + 1 / 2
    assert exponential.score == pytest.approx(dcg / idcg)


def test_zero_gain_ids_are_not_relevant() -> None:
    gains = {"a": 0, "b": 2}
    assert run("retrieval-hit-at-k", ["a"], gains).score == 0.0
    assert run("retrieval-recall-at-k", ["a", "b"], gains).score == 1.0


def test_ties_in_gain_do_not_change_ndcg() -> None:
    gains = {"a": 1, "b": 1, "c": 1}
    assert run("retrieval-ndcg-at-k", ["a", "b", "c"], gains).score == pytest.approx(1.0)
    assert run("retrieval-ndcg-at-k", ["c", "a", "b"], gains).score == pytest.approx(1.0)


# ---------------------------------------------------------------------------------- edge cases


def test_k_beyond_the_list() -> None:
    config = {"k": 10}
    assert run("retrieval-precision-at-k", ["a", "b"], ["b"], config).score == pytest.approx(0.1)
    assert run("retrieval-recall-at-k", ["a", "b"], ["b"], config).score == 1.0
    assert run("retrieval-mrr", ["a", "b"], ["b"], config).score == 0.5
    assert run("retrieval-ndcg-at-k", ["a", "b"], ["b"], config).score == pytest.approx(1 / math.log2(3))


def test_empty_list_scores_zero_without_error() -> None:
    for kind in RANKING_TYPES:
        for config in ({}, {"k": 3}):
            result = run(kind, [], ["a"], config)
            assert result.score == 0.0 and not result.passed and not result.error, (kind, config)
    assert run("retrieval-hit-at-k", [], ["a"]).reason == "No relevant id is in the top 0 (0 retrieved)"


def test_repeated_ids_earn_credit_once() -> None:
    precision = run("retrieval-precision-at-k", ["a", "a", "b"], ["a", "b"], {"k": 2})
    assert precision.score == 0.5
    assert precision.details["repeated_ids"] == ["a"]
    assert run("retrieval-recall-at-k", ["a", "a", "a"], ["a", "b"]).score == 0.5
    assert run("retrieval-ndcg-at-k", ["a", "a"], ["a"]).score == pytest.approx(1.0)


def test_unicode_and_numeric_ids() -> None:
    assert run("retrieval-hit-at-k", ["東京-1", "café"], ["café"]).details["hit_ranks"] == [2]
    assert run("retrieval-recall-at-k", [3, 7.0, "9"], ["7", 9]).score == 1.0
    decomposed, composed = "cafe\u0301", "caf\u00e9"  # the same "café", NFD and NFC
    assert run("retrieval-hit-at-k", [decomposed], [composed]).passed


def test_objects_fenced_json_list_field_and_from_var() -> None:
    docs = [{"doc_id": "x"}, {"doc_id": "y"}]
    assert run("retrieval-mrr", docs, ["y"], {"idField": "doc_id"}).score == 0.5
    fenced = "```json\n" + json.dumps(["x", "y"]) + "\n```"
    assert run("retrieval-hit-at-k", fenced, "x").passed
    nested = {"result": {"ids": ["x", "y"]}, "answer": "..."}
    assert run("retrieval-recall-at-k", nested, ["x", "y"], {"listField": "result.ids"}).score == 1.0
    from_var = run(
        "retrieval-hit-at-k", "free text answer", ["y"], {"fromVar": "retrieved"}, vars={"retrieved": docs}
    )
    assert from_var.error  # objects without the default "id" field
    assert "has no id" in from_var.reason and "'id'" in from_var.reason
    config = {"fromVar": "retrieved", "idField": "doc_id"}
    assert run("retrieval-hit-at-k", "free text", ["y"], config, vars={"retrieved": docs}).passed
    as_json_text = {"retrieved": json.dumps(["x", "y"])}
    assert run("retrieval-hit-at-k", "free text", ["y"], {"fromVar": "retrieved"}, vars=as_json_text).passed


@pytest.mark.parametrize(
    ("output", "config", "vars", "fragment"),
    [
        ("not json", {}, {}, "needs the output to be a JSON list of ids or passages"),
        ('{"ids": ["a"]}', {}, {}, "got dict; set config.listField"),
        ('{"ids": ["a"]}', {"listField": "docs"}, {}, "has no field 'docs' (config.listField)"),
        ("[]", {"fromVar": "missing"}, {}, "var 'missing' (config.fromVar) is not set"),
        ("[]", {"fromVar": "docs"}, {"docs": "nope"}, "needs var 'docs' to be a JSON list"),
        ('[["nested"]]', {}, {}, "item 0 of the ranked list has no id"),
    ],
)
def test_unusable_input_is_an_error(
    output: str, config: dict[str, Any], vars: dict[str, Any], fragment: str
) -> None:
    result = run("retrieval-recall-at-k", output, ["a"], config, vars=vars)
    assert result.error and not result.passed
    assert fragment in result.reason


@pytest.mark.parametrize(
    ("kind", "value", "config", "problem"),
    [
        ("retrieval-hit-at-k", ["a"], {"k": 0}, "config.k: must be >= 1 (got 0)"),
        ("retrieval-mrr", ["a"], {"k": "3"}, "config.k: must be a whole number (got a string '3')"),
        ("retrieval-recall-at-k", None, {}, ": missing required key 'value'"),
        ("retrieval-recall-at-k", [], {}, "value: must have at least 1 item(s)"),
        ("retrieval-ndcg-at-k", {"a": 0}, {}, "value: needs a relevant id (a gain above 0)"),
        ("retrieval-ndcg-at-k", {"a": -1}, {}, "value.a: must be >= 0 (got -1)"),
        (
            "retrieval-ndcg-at-k",
            {"a": 1},
            {"gain": "log"},
            "config.gain: must be one of 'linear', 'exponential'",
        ),
        ("retrieval-precision-at-k", ["a"], {"fromVar": ""}, "config.fromVar: must not be empty"),
        ("answer-containment-at-k", "", {}, "value: must not be empty or blank"),
        ("answer-containment-at-k", "Paris", {"k": -2}, "config.k: must be >= 1 (got -2)"),
        ("answer-containment-at-k", "Paris", {"idField": "id"}, "config.idField: unknown key 'idField'"),
    ],
)
def test_declared_rules(kind: str, value: Any, config: dict[str, Any], problem: str) -> None:
    # validate refuses these at load (located), so the handlers never see them
    assertion = {"type": kind, "config": config, **({"value": value} if value is not None else {})}
    found = declared_problems(assertion)
    assert any(text.startswith(problem) for text in found), found


def test_defaults_registered() -> None:
    expected = {
        "retrieval-hit-at-k": None,  # 0 or 1: without a threshold a hit passes
        "retrieval-recall-at-k": 1.0,
        "retrieval-precision-at-k": 0.5,
        "retrieval-mrr": 0.5,
        "retrieval-ndcg-at-k": 0.5,
        "answer-containment-at-k": None,
    }
    for kind, threshold in expected.items():
        definition = get_assertion(kind)
        assert definition is not None and definition.family == "retrieval" and definition.requires_value
        assert definition.default_threshold == threshold
        assert declared_problems({"type": kind, "value": ["a"], "config": {"k": 2}}) == []


# --------------------------------------------------------------------------- answer containment

PASSAGES = [
    "Berlin is the capital of Germany.",
    "The Louvre is a museum.",
    "Gustave Eiffel's company built the Eiffel Tower in Paris.",
]


def test_answer_containment_at_k() -> None:
    assert not run("answer-containment-at-k", PASSAGES, "the Eiffel tower", {"k": 2}).passed
    result = run("answer-containment-at-k", PASSAGES, "the Eiffel tower", {"k": 3})
    assert result.passed and result.details["rank"] == 3
    assert result.reason == "Answer 'the Eiffel tower' appears in passage 3 of the top 3"
    miss = run("answer-containment-at-k", PASSAGES, ["Rome", "Madrid"], {"k": 10})
    assert miss.reason == "Answer ['Rome', 'Madrid'] does not appear in the top 10 passages (3 retrieved)"
    assert run("answer-containment-at-k", PASSAGES, ["Rome", "louvre"]).details["answer"] == "louvre"


def test_answer_containment_matches_whole_tokens_only() -> None:
    assert not contains_answer("Concatenate the strings", "cat")
    assert contains_answer("A cat, sleeping.", "CAT")
    assert contains_answer("Die Stadt ZÜRICH liegt am See", "Zürich")
    assert contains_answer("Option (A) is right", "A")  # "A" normalises to nothing: substring search
    assert not contains_answer("", "Paris")


def test_answer_containment_with_objects_and_errors() -> None:
    docs = [{"body": "Nothing here"}, {"body": "Paris, France"}]
    assert run("answer-containment-at-k", docs, "Paris", {"textField": "body"}).details["rank"] == 2
    broken = run("answer-containment-at-k", docs, "Paris")
    assert broken.error and "passage 0 is neither a string nor an object with 'text'" in broken.reason
    assert run("answer-containment-at-k", [], "Paris").score == 0.0


# ------------------------------------------------------------------------------------ trec_eval


def test_ranking_metrics_match_trec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(23)
    for query in range(150):
        pool = [f"d{i}" for i in range(12)]
        gains = {doc: rng.choice([0, 0, 1, 2, 3]) for doc in rng.sample(pool, rng.randint(1, 8))}
        if not any(gains.values()):
            gains[pool[0]] = 1
        ranked = rng.sample(pool, rng.randint(1, 12))
        k = rng.randint(1, 12)
        run_scores = {doc: float(len(ranked) - position) for position, doc in enumerate(ranked)}
        measures = {f"P.{k}", f"recall.{k}", f"ndcg_cut.{k}", f"success.{k}", "recip_rank"}
        expected = pytrec_eval.RelevanceEvaluator({"q": gains}, measures).evaluate({"q": run_scores})["q"]
        config = {"k": k}
        label = (query, ranked, gains, k)
        assert run("retrieval-precision-at-k", ranked, gains, config).score == pytest.approx(
            expected[f"P_{k}"]
        ), label
        assert run("retrieval-recall-at-k", ranked, gains, config).score == pytest.approx(
            expected[f"recall_{k}"]
        )
        assert run("retrieval-ndcg-at-k", ranked, gains, config).score == pytest.approx(
            expected[f"ndcg_cut_{k}"]
        )
        assert run("retrieval-hit-at-k", ranked, gains, config).score == expected[f"success_{k}"]
        assert run("retrieval-mrr", ranked, gains).score == pytest.approx(expected["recip_rank"])


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "retrieval-hit-at-k": {"value": ["b"], "output": '["a", "b"]', "config": {"k": 2}},
    "retrieval-recall-at-k": {"value": ["b"], "output": '["a", "b"]'},
    "retrieval-precision-at-k": {"value": ["b"], "output": '["a", "b"]'},
    "retrieval-mrr": {"value": "b", "output": '["a", "b"]'},
    "retrieval-ndcg-at-k": {"value": {"b": 2}, "output": '["a", "b"]', "config": {"gain": "exponential"}},
    "answer-containment-at-k": {"value": "Paris", "output": '["Paris is the capital", "Lyon"]'},
}
