"""The similar family with real providers: the bundled model, fake vectors, and loopback servers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalh.assertions.registry import get_assertion
from evalh.assertions.similarity import similarity_provider_problem
from evalh.common.vectors import cosine
from evalh.model import ProviderChoice, ProviderSpec, TestCase
from evalh.providers.fake import fake_vector
from evalh.providers.local import make_local
from evalh.runner.services import ProviderPool
from tests.assertions.helpers import declared_problems, make_context
from tests.assertions.semantic_support import grade_full, grade_positive, services
from tests.loopback import LoopbackServer, Reply, Request
from tests.providers.embedding_server import DIM, hf_sentence_similarity, openai_embeddings

PARIS = "Paris is the capital of France."
PARAPHRASE = "The capital city of France is Paris."
UNRELATED = "My dog enjoys chewing on sticks in the garden."
FAKE = ProviderChoice(default=ProviderSpec(id="fake"))


def local_vectors(texts: list[str]) -> np.ndarray:
    return asyncio.run(make_local(ProviderSpec(id="local")).embed(texts)).vectors


def test_paraphrase_passes_with_the_bundled_model() -> None:
    result = grade_positive(make_context("similar", value=PARAPHRASE, output=PARIS, services=services()))
    vectors = local_vectors([PARIS, PARAPHRASE])
    assert result.passed and not result.error
    assert result.score == pytest.approx(cosine(vectors[0], vectors[1]), abs=1e-6)
    assert result.score > 0.9
    assert result.reason == (
        f"Cosine similarity {result.score:.2f} to {PARAPHRASE!r} is greater than or equal to threshold 0.75"
    )
    assert result.details["models"][0]["provider"] == "local"


def test_unrelated_text_fails_and_not_similar_passes() -> None:
    ctx = make_context("not-similar", value=UNRELATED, output=PARIS, services=services())
    positive = grade_positive(ctx)
    assert not positive.passed and positive.score < 0.3
    assert "is less than threshold 0.75" in positive.reason
    graded = grade_full(ctx)
    assert graded.passed and graded.score == pytest.approx(1 - positive.score)


def test_similar_cosine_is_similar() -> None:
    plain = grade_positive(make_context("similar", value=PARAPHRASE, output=PARIS, services=services()))
    named = grade_positive(
        make_context("similar:cosine", value=PARAPHRASE, output=PARIS, services=services())
    )
    assert plain.score == named.score and plain.reason == named.reason


def test_dot_is_not_clamped() -> None:
    pool = ProviderPool()
    raw = ProviderChoice(default=ProviderSpec(id="fake", config={"normalize": False}))
    ctx = make_context(
        "similar:dot", value="cat cat cat", output="cat cat", services=services(pool), provider=raw
    )
    result = grade_positive(ctx)
    expected = float(
        fake_vector("cat cat", 256, normalize=False) @ fake_vector("cat cat cat", 256, normalize=False)
    )
    assert result.score == pytest.approx(expected) and result.score == pytest.approx(6.0)
    assert result.passed and result.reason.startswith("Dot product 6.00 to 'cat cat cat' is greater than")


def test_euclidean_is_a_maximum_distance_with_score_one_over_one_plus_d() -> None:
    vectors = local_vectors([PARIS, PARAPHRASE])
    distance = float(np.linalg.norm(vectors[0].astype(np.float64) - vectors[1]))
    ctx = make_context(
        "similar:euclidean", value=PARAPHRASE, output=PARIS, threshold=0.5, services=services()
    )
    result = grade_positive(ctx)
    assert result.passed and result.details["distance"] == pytest.approx(distance, abs=1e-6)
    assert result.score == pytest.approx(1 / (1 + distance), abs=1e-6)
    assert (
        result.reason
        == f"Euclidean distance {distance:.2f} to {PARAPHRASE!r} is less than or equal to threshold 0.5"
    )
    far = grade_positive(
        make_context("similar:euclidean", value=UNRELATED, output=PARIS, threshold=0.5, services=services())
    )
    assert not far.passed and "is greater than threshold 0.5" in far.reason


def test_at_the_threshold_similar_passes_and_not_similar_fails() -> None:
    # fake vectors of "alpha beta" and "alpha gamma": one shared word of two, cosine exactly 0.5
    a, b = fake_vector("alpha beta", 256), fake_vector("alpha gamma", 256)
    assert float(a @ b) == pytest.approx(0.5, abs=1e-6)
    ctx = make_context(
        "similar", value="alpha gamma", output="alpha beta", threshold=0.5, services=services(), provider=FAKE
    )
    assert grade_full(ctx).passed
    negated = make_context(
        "not-similar",
        value="alpha gamma",
        output="alpha beta",
        threshold=0.5,
        services=services(),
        provider=FAKE,
    )
    assert not grade_full(negated).passed


def test_a_list_passes_if_any_value_passes_and_reports_the_best() -> None:
    values = [UNRELATED, PARAPHRASE, "Berlin is in Germany."]
    result = grade_positive(make_context("similar", value=values, output=PARIS, services=services()))
    per_value = [entry["raw"] for entry in result.details["models"][0]["per_value"]]
    assert result.passed and result.score == pytest.approx(max(per_value))
    assert result.reason.startswith(
        f"Best cosine similarity {max(per_value):.2f} (to {PARAPHRASE!r}, of 3 values)"
    )
    assert result.details["models"][0]["best_value"] == PARAPHRASE


def test_not_similar_with_a_list_passes_only_when_dissimilar_to_every_value() -> None:
    close = make_context("not-similar", value=[UNRELATED, PARAPHRASE], output=PARIS, services=services())
    far = make_context(
        "not-similar", value=[UNRELATED, "Quarterly revenue grew."], output=PARIS, services=services()
    )
    assert not grade_full(close).passed
    assert grade_full(far).passed


def test_mean_aggregation_and_binary_scores() -> None:
    values = [UNRELATED, PARAPHRASE]
    best = grade_positive(make_context("similar", value=values, output=PARIS, services=services()))
    raws = [entry["raw"] for entry in best.details["models"][0]["per_value"]]
    mean = grade_positive(
        make_context(
            "similar", value=values, output=PARIS, config={"aggregation": "mean"}, services=services()
        )
    )
    assert mean.score == pytest.approx(sum(raws) / 2) and not mean.passed
    assert mean.reason.startswith(f"Mean cosine similarity {sum(raws) / 2:.2f} over 2 values is less than")
    binary = grade_positive(
        make_context("similar", value=values, output=PARIS, config={"binary": True}, services=services())
    )
    assert binary.passed and binary.score == 1.0
    binary_fail = grade_positive(
        make_context("similar", value=UNRELATED, output=PARIS, config={"binary": True}, services=services())
    )
    assert not binary_fail.passed and binary_fail.score == 0.0


def test_a_zero_vector_is_an_error_never_inverted() -> None:
    ctx = make_context("not-similar", value="something", output="?!", services=services(), provider=FAKE)
    graded = grade_full(ctx)
    assert graded.error and not graded.passed
    assert graded.reason == "fake: the embedding of the output is a zero vector"


def test_a_zero_vector_of_a_value_is_named_as_the_value() -> None:
    # the store checks each vector once as it arrives; the pair check names the side that is unfit
    values = [PARAPHRASE, "?!"]
    ctx = make_context("similar", value=values, output=PARIS, services=services(), provider=FAKE)
    graded = grade_full(ctx)
    assert graded.error and graded.reason == "fake: the embedding of value '?!' is a zero vector"


@pytest.mark.parametrize("output", ["", "  \n\t"])
@pytest.mark.parametrize("kind", ["similar", "similar:euclidean", "bertscore", "bertscore-like"])
def test_an_empty_output_fails_both_the_type_and_its_negation(kind: str, output: str) -> None:
    for negate in ("", "not-"):
        ctx = make_context(f"{negate}{kind}", value="Paris.", output=output, services=services())
        graded = grade_full(ctx)
        assert not graded.passed and not graded.error and graded.score == 0.0
        assert graded.reason.startswith("the output is empty, so it is neither similar nor dissimilar")


def test_a_dimension_mismatch_is_an_error(loopback: LoopbackServer) -> None:
    def uneven(request: Request) -> Reply:
        texts = request.json["input"]
        data = [{"index": i, "embedding": [1.0] * (3 + i)} for i, _ in enumerate(texts)]
        return Reply.json({"data": data})

    loopback.route("POST", "/v1/embeddings", uneven)
    spec = ProviderSpec(
        id="openai:embedding:m", config={"apiBaseUrl": loopback.url + "/v1", "apiKey": "k-123"}
    )
    ctx = make_context(
        "similar",
        value="b",
        output="a",
        services=services(ProviderPool()),
        provider=ProviderChoice(default=spec),
    )
    graded = grade_full(ctx)
    assert graded.error and "dimension mismatch" in graded.reason and "nan" not in graded.reason.lower()


@pytest.mark.parametrize(
    ("value", "config", "problem"),
    [
        (42, {}, "value: must be a string or a list (got a whole number 42)"),
        ([], {}, "value: must have at least 1 item(s)"),
        (["a", 3], {}, "value.1: must be a string"),
        (
            "a",
            {"agregation": "max"},
            "config.agregation: unknown key 'agregation' (Did you mean 'aggregation'?)",
        ),
        ("a", {"aggregation": "median"}, "config.aggregation: must be one of 'max', 'mean'"),
        ("a", {"binary": "yes"}, "config.binary: must be true or false"),
    ],
)
def test_declared_rules(value: object, config: dict[str, object], problem: str) -> None:
    # validate refuses these at load, so the handler never sees them
    found = declared_problems({"type": "similar", "value": value, "config": config})
    assert any(text.startswith(problem) for text in found), found


def test_the_registry_declares_the_family() -> None:
    for name, meaning in (
        ("similar", "min cosine similarity"),
        ("similar:cosine", "min cosine similarity"),
        ("similar:dot", "min dot product"),
        ("similar:euclidean", "max distance"),
    ):
        definition = get_assertion(name)
        assert definition is not None and definition.default_threshold == 0.75
        assert definition.threshold_meaning == meaning and definition.requires_value
        assert definition.needs == ("embedding",) and definition.prefetch is not None
    assert (
        declared_problems(
            {"type": "similar", "value": "a", "config": {"aggregation": "mean", "binary": True}}
        )
        == []
    )


def test_multi_model_scores_are_averaged() -> None:
    models = ProviderChoice(models=(ProviderSpec(id="local"), ProviderSpec(id="fake", label="bag-of-words")))
    result = grade_positive(
        make_context("similar", value=PARAPHRASE, output=PARIS, services=services(), provider=models)
    )
    scores = {entry["provider"]: entry["score"] for entry in result.details["models"]}
    assert set(scores) == {"local", "bag-of-words"}
    assert result.score == pytest.approx((scores["local"] + scores["bag-of-words"]) / 2)
    assert result.reason.startswith(f"Mean cosine similarity {result.score:.2f} over 2 models (local: ")


def test_provider_resolution_order() -> None:
    local_default = services(default=ProviderChoice(embedding=ProviderSpec(id="fake")))
    ctx = make_context("similar", value="red apple", output="red apple", services=local_default)
    assert grade_positive(ctx).details["models"][0]["provider"] == "fake"  # the suite default
    test_level = make_context("similar", value="x", output="x", services=services())
    test_level = test_level.__class__(**{**test_level.__dict__, "test": TestCase(index=0, provider=FAKE)})
    assert (
        grade_positive(test_level).details["models"][0]["provider"] == "fake"
    )  # the test's options.provider
    typed_map = ProviderChoice(text=ProviderSpec(id="echo"), embedding=ProviderSpec(id="fake:32"))
    assertion_level = make_context(
        "similar", value="x", output="x", services=local_default, provider=typed_map
    )
    assert grade_positive(assertion_level).details["models"][0]["provider"] == "fake:32"  # the assertion wins


def test_a_provider_that_cannot_embed_is_an_error() -> None:
    echo = ProviderChoice(default=ProviderSpec(id="echo"))
    graded = grade_full(
        make_context("not-similar", value="x", output="x", services=services(), provider=echo)
    )
    assert graded.error and "cannot embed texts" in graded.reason
    assert similarity_provider_problem("similar", ("text",)) is not None
    assert similarity_provider_problem("similar:dot", ("embedding",)) is None


def test_an_openai_compatible_server_gives_the_same_scores_as_its_vectors(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = ProviderSpec(
        id="openai:embedding:m", config={"apiBaseUrl": loopback.url + "/v1", "apiKey": "k-42"}
    )
    ctx = make_context(
        "similar",
        value=["red apple pie", "blue sky"],
        output="red apple tart",
        services=services(ProviderPool()),
        provider=ProviderChoice(default=spec),
    )
    result = grade_positive(ctx)
    output = fake_vector("red apple tart", DIM)
    best = max(float(output @ fake_vector(v, DIM)) for v in ["red apple pie", "blue sky"])
    assert result.score == pytest.approx(best, abs=1e-6)
    assert len(loopback.requests) == 1 and loopback.requests[0].json["input"] == sorted(
        ["red apple tart", "red apple pie", "blue sky"], key=len
    )


def test_sentence_similarity_serves_cosine_only(loopback: LoopbackServer) -> None:
    model = "sentence-transformers/all-MiniLM-L6-v2"
    loopback.route("POST", f"/models/{model}/pipeline/sentence-similarity", hf_sentence_similarity)
    spec = ProviderSpec(id=f"huggingface:sentence-similarity:{model}", config={"apiBaseUrl": loopback.url})
    choice = ProviderChoice(default=spec)
    ctx = make_context(
        "similar",
        value=["red apple", "blue sky"],
        output="red apple",
        services=services(ProviderPool()),
        provider=choice,
    )
    result = grade_positive(ctx)
    assert result.passed and result.score == pytest.approx(1.0, abs=1e-6)
    (request,) = loopback.requests
    assert request.json["inputs"]["source_sentence"] == "red apple"  # one request for every value
    assert sorted(request.json["inputs"]["sentences"]) == ["blue sky", "red apple"]
    dot = grade_full(
        make_context("similar:dot", value="a", output="b", services=services(ProviderPool()), provider=choice)
    )
    assert dot.error and "cosine similarity only" in dot.reason
    assert similarity_provider_problem("similar:euclidean", ("similarity",)) is not None
    assert similarity_provider_problem("similar", ("similarity",)) is None


def test_prefetch_declares_output_and_values_per_provider() -> None:
    ctx = make_context(
        "similar",
        value=["a", "b"],
        output="out",
        provider=ProviderChoice(models=(ProviderSpec(id="local"), ProviderSpec(id="fake"))),
        services=services(),
    )
    definition = get_assertion("similar")
    assert definition is not None and definition.prefetch is not None
    requests = definition.prefetch(ctx)
    assert [r.provider.id for r in requests] == ["local", "fake"]
    assert all(r.texts == ("out", "a", "b") and r.granularity == "sentence" for r in requests)


def test_a_python_embedder_works_through_the_store(tmp_path: Path) -> None:
    (tmp_path / "embedder.py").write_text(
        "def embed(text):\n"
        "    return {'embedding': [float(len(text)), 1.0, float('a' in text)], 'tokenUsage': {'prompt': 2}}\n"
    )
    spec = ProviderSpec(id="python:embedder.py:embed", base_dir=str(tmp_path))
    ctx = make_context(
        "similar",
        value="bbb",
        output="aaaa",
        services=services(ProviderPool()),
        provider=ProviderChoice(default=spec),
    )
    result = grade_positive(ctx)
    a, b = np.array([4.0, 1.0, 1.0]), np.array([3.0, 1.0, 0.0])
    assert result.score == pytest.approx(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))), abs=1e-6)


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "similar": {"value": "The capital is Paris", "output": "Paris is the capital"},
    "similar:cosine": {"value": "The capital is Paris", "output": "Paris is the capital"},
    "similar:dot": {"value": "The capital is Paris", "output": "Paris is the capital"},
    "similar:euclidean": {"value": "The capital is Paris", "output": "Paris is the capital"},
}
