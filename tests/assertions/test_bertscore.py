"""bertscore on the bundled model's token vectors, and bertscore-like with any embedding provider."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pytest

from evalh.assertions.bertscore import (
    idf_weights,
    suite_references,
    word_tokens,
)
from evalh.assertions.registry import get_assertion
from evalh.common.vectors import greedy_match
from evalh.model import AssertionSpec, ProviderChoice, ProviderSpec, TestCase
from evalh.providers.base import TokenEmbedding
from evalh.providers.local import make_local
from evalh.runner.grading import positive_verdict
from evalh.runner.services import ProviderPool
from tests.assertions.helpers import declared_problems, make_context
from tests.assertions.semantic_support import grade_full, grade_positive, services

PARIS = "Paris is the capital of France."
PARAPHRASE = "The capital city of France is Paris."
UNRELATED = "My dog enjoys chewing on sticks in the garden."


def tokens(texts: list[str]) -> list[TokenEmbedding]:
    return asyncio.run(make_local(ProviderSpec(id="local")).embed_tokens(texts))


def test_bertscore_is_greedy_matching_of_contextual_tokens() -> None:
    result = grade_positive(make_context("bertscore", value=PARAPHRASE, output=PARIS, services=services()))
    output, reference = tokens([PARIS, PARAPHRASE])
    match = greedy_match(output.vectors, reference.vectors)
    assert result.details["precision"] == pytest.approx(match.precision, abs=1e-6)
    assert result.details["recall"] == pytest.approx(match.recall, abs=1e-6)
    assert result.score == pytest.approx(match.f1, abs=1e-6) and result.score > 0.85
    assert result.passed
    assert (
        result.reason
        == f"BERTScore F1 {result.score:.2f} against {PARAPHRASE!r} is greater than or equal to threshold 0.5"
    )
    alignment = result.details["alignment"]
    assert [row["token"] for row in alignment["output"]] == list(output.tokens)
    assert {"token": "city", "match": "capital"}.items() <= alignment["reference"][2].items()


def test_unrelated_text_scores_low_and_not_bertscore_passes() -> None:
    ctx = make_context("not-bertscore", value=UNRELATED, output=PARIS, services=services())
    positive = grade_positive(ctx)
    assert positive.score < 0.3 and not positive.passed
    assert grade_full(ctx).passed


def test_precision_recall_and_baseline() -> None:
    base = grade_positive(make_context("bertscore", value=PARAPHRASE, output=PARIS, services=services()))
    recall = grade_positive(
        make_context(
            "bertscore", value=PARAPHRASE, output=PARIS, config={"score": "recall"}, services=services()
        )
    )
    assert recall.score == pytest.approx(base.details["recall"]) and recall.reason.startswith(
        "BERTScore recall"
    )
    precision = grade_positive(
        make_context(
            "bertscore", value=PARAPHRASE, output=PARIS, config={"score": "precision"}, services=services()
        )
    )
    assert precision.score == pytest.approx(base.details["precision"])
    rescaled = grade_positive(
        make_context(
            "bertscore", value=PARAPHRASE, output=PARIS, config={"baseline": 0.4}, services=services()
        )
    )
    assert rescaled.score == pytest.approx((base.score - 0.4) / 0.6)
    assert rescaled.details["precision"] == pytest.approx((base.details["precision"] - 0.4) / 0.6)


def test_idf_weights_follow_the_paper() -> None:
    weights, unseen = idf_weights([("the", "cat"), ("the", "dog"), ("a", "bird")])
    assert weights["the"] == pytest.approx(math.log(4 / 3))
    assert weights["cat"] == pytest.approx(math.log(4 / 2))
    assert unseen == pytest.approx(math.log(4))


def test_idf_uses_every_bertscore_reference_of_the_suite() -> None:
    references = [PARAPHRASE, "The capital of Italy is Rome.", "The capital of Spain is Madrid."]
    scored = [
        TestCase(index=i, asserts=(AssertionSpec(type="bertscore", value=ref),))
        for i, ref in enumerate(references)
    ]
    suite = (*scored, TestCase(index=9, asserts=(AssertionSpec(type="similar", value="ignored"),)))
    assert suite_references(suite) == tuple(references)
    ctx = make_context(
        "bertscore",
        value=PARAPHRASE,
        output=PARIS,
        config={"idf": True},
        services=services(),
        suite_tests=suite,
    )
    result = grade_positive(ctx)
    output, reference, *others = tokens([PARIS, *references])
    idf, unseen = idf_weights([reference.tokens, *(o.tokens for o in others)])
    weigh = lambda item: np.array([idf.get(t, unseen) for t in item.tokens])  # noqa: E731
    match = greedy_match(output.vectors, reference.vectors, weigh(output), weigh(reference))
    assert result.score == pytest.approx(match.f1, abs=1e-6)
    plain = grade_positive(make_context("bertscore", value=PARAPHRASE, output=PARIS, services=services()))
    assert abs(result.score - plain.score) > 1e-3  # "the" and "capital" weigh less


def test_several_references_best_or_mean() -> None:
    values = [UNRELATED, PARAPHRASE]
    best = grade_positive(make_context("bertscore", value=values, output=PARIS, services=services()))
    per = {row["reference"]: row["f1"] for row in best.details["models"][0]["per_reference"]}
    assert best.score == pytest.approx(max(per.values())) and best.details["reference"] == PARAPHRASE
    assert best.reason.startswith(
        f"Best BERTScore F1 {best.score:.2f} (against {PARAPHRASE!r}, of 2 references)"
    )
    mean = grade_positive(
        make_context(
            "bertscore", value=values, output=PARIS, config={"aggregation": "mean"}, services=services()
        )
    )
    assert mean.score == pytest.approx(sum(per.values()) / 2)


def test_an_empty_output_scores_zero() -> None:
    result = grade_positive(make_context("bertscore", value=PARAPHRASE, output="", services=services()))
    assert not result.error and result.score == 0.0 and not result.passed


def test_bertscore_needs_token_vectors() -> None:
    fake = ProviderChoice(default=ProviderSpec(id="fake"))
    graded = grade_full(
        make_context("not-bertscore", value="a", output="b", services=services(), provider=fake)
    )
    assert graded.error and "gives no contextual token vectors" in graded.reason


def test_bertscore_like_with_the_fake_provider_is_word_overlap() -> None:
    fake = ProviderChoice(default=ProviderSpec(id="fake:1024"))
    same_words = grade_positive(
        make_context(
            "bertscore-like", value="the cat sat", output="sat the cat", services=services(), provider=fake
        )
    )
    assert same_words.score == pytest.approx(1.0, abs=1e-6)
    half = grade_positive(
        make_context(
            "bertscore-like", value="red apple", output="red pear", services=services(), provider=fake
        )
    )
    assert half.details["precision"] == pytest.approx(0.5, abs=0.05) and half.details[
        "recall"
    ] == pytest.approx(0.5, abs=0.05)
    assert not half.passed and half.reason.startswith("BERTScore-like F1")


def test_bertscore_like_embeds_each_word_once_per_suite() -> None:
    shared = services(ProviderPool())
    first = make_context(
        "bertscore-like", value="The cat sat on the mat.", output="A cat sat.", services=shared
    )
    second = make_context(
        "bertscore-like", value="The dog sat on the mat.", output="A dog sat.", services=shared
    )
    definition = get_assertion("bertscore-like")
    assert definition is not None and definition.prefetch is not None

    async def scenario() -> tuple[float, float]:
        await shared.embeddings.prefetch([*definition.prefetch(first), *definition.prefetch(second)])
        one = await positive_verdict(definition, first)
        two = await positive_verdict(definition, second)
        return one.score, two.score

    scores = asyncio.run(scenario())
    vocabulary = set(word_tokens("The cat sat on the mat. A cat sat. The dog sat on the mat. A dog sat."))
    usage = shared.embeddings.usage_by_provider()["local"]
    assert usage.texts == len(vocabulary) == 7 and usage.requests == 1
    assert all(0.5 < score <= 1.0 for score in scores)


def test_bertscore_like_separates_paraphrase_from_unrelated() -> None:
    close = grade_positive(
        make_context("bertscore-like", value=PARAPHRASE, output=PARIS, services=services())
    )
    far = grade_positive(make_context("bertscore-like", value=UNRELATED, output=PARIS, services=services()))
    assert close.passed and close.score > 0.9
    assert not far.passed and far.score < close.score - 0.3


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"score": "f2"}, "config.score: must be one of 'f1', 'precision', 'recall'"),
        ({"baseline": 1.0}, "config.baseline: must be < 1"),
        ({"idf": "yes"}, "config.idf: must be true or false"),
        ({"aggregation": "min"}, "config.aggregation: must be one of 'max', 'mean'"),
        ({"scores": "f1"}, "config.scores: unknown key 'scores' (Did you mean 'score'?)"),
        ({"binary": "yes"}, "config.binary: must be true or false"),
    ],
)
def test_declared_rules_refuse_bad_config(config: dict[str, object], problem: str) -> None:
    found = declared_problems({"type": "bertscore", "value": "ref", "config": config})
    assert any(problem in text for text in found), found
    assert declared_problems({"type": "bertscore", "value": " "}) == [
        "value: must not be empty or blank for a 'bertscore' assertion"
    ]
    assert declared_problems({"type": "bertscore-like", "value": "ref", "config": {"idf": True}}) != []
    good = {"type": "bertscore-like", "value": ["a", "b"], "config": {"score": "recall", "baseline": 0.3}}
    assert declared_problems(good) == []


def test_the_registry_declares_both() -> None:
    bertscore, like = get_assertion("bertscore"), get_assertion("bertscore-like")
    assert bertscore is not None and like is not None
    assert bertscore.default_threshold == 0.5 and like.default_threshold == 0.6
    assert bertscore.requires_value and like.requires_value
    assert bertscore.needs == ("tokens",) and like.needs == ("embedding",)


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "bertscore": {"value": "The capital is Paris", "output": "Paris is the capital"},
    "bertscore-like": {"value": "The capital is Paris", "output": "Paris is the capital"},
}
