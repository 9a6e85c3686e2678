"""The local provider runs the bundled all-MiniLM-L6-v2 int8 model for real."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import numpy as np
import pytest

from evalh.common.vectors import cosine
from evalh.errors import ConfigError, ModelAssetError
from evalh.model import ProviderSpec
from evalh.providers import local as local_module
from evalh.providers.base import supports
from evalh.providers.local import (
    BUNDLED_MODEL_SHA256,
    BUNDLED_TOKENIZER_SHA256,
    TOKENS_PER_RUN,
    LocalEmbedder,
    bundled_model_path,
    bundled_tokenizer_path,
    file_sha256,
    make_local,
)
from evalh.providers.registry import capabilities_of

PARIS = "Paris is the capital of France."
PARIS_PARAPHRASE = "The capital city of France is Paris."
UNRELATED = "My dog enjoys chewing on sticks in the garden."


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return make_local(ProviderSpec(id="local"))


def test_bundled_files_are_what_we_ship() -> None:
    assert file_sha256(bundled_model_path()) == BUNDLED_MODEL_SHA256
    assert file_sha256(bundled_tokenizer_path()) == BUNDLED_TOKENIZER_SHA256


def test_paraphrase_scores_high_and_unrelated_low(local: LocalEmbedder) -> None:
    result = asyncio.run(local.embed([PARIS, PARIS_PARAPHRASE, UNRELATED]))
    vectors = result.vectors
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert cosine(vectors[0], vectors[1]) > 0.9
    assert cosine(vectors[0], vectors[2]) < 0.3
    assert result.usage.texts == 3 and result.usage.prompt_tokens > 20


def test_batching_and_length_sorting_keep_input_order(local: LocalEmbedder) -> None:
    texts = [UNRELATED * 3, "hi", PARIS, "a much longer sentence about many different things " * 4, ""]
    together = asyncio.run(local.embed(texts)).vectors
    for index, text in enumerate(texts):
        alone = asyncio.run(local.embed([text])).vectors[0]
        np.testing.assert_allclose(together[index], alone, atol=2e-5)


def test_a_run_holds_at_most_its_token_budget(local: LocalEmbedder) -> None:
    # long texts: 32 rows of them (the row cap) would be padded to thousands of tokens in one run
    texts = [" ".join(["refund"] * (40 + i % 50)) + f" {i}" for i in range(64)] + ["hi"] * 40
    encoded = local._encode(local.load(), texts)
    plan = local._plan(encoded)
    assert sorted(index for batch in plan for index in batch) == list(range(len(texts)))
    widths = [max(len(encoded[i].ids) for i in batch) for batch in plan]
    within = [len(b) == 1 or len(b) * width <= TOKENS_PER_RUN for b, width in zip(plan, widths, strict=True)]
    assert all(within)
    assert widths == sorted(widths)  # still length-sorted: little padding
    assert max(len(batch) for batch in plan) == local.settings.inference_batch_size  # the 40 short ones


def test_vectors_do_not_depend_on_how_texts_are_grouped(local: LocalEmbedder) -> None:
    texts = [" ".join(["policy", "delivery", "chat"][j % 3] for j in range(1 + 7 * i)) for i in range(30)]
    grouped = asyncio.run(local.embed(texts)).vectors
    one_by_one = make_local(ProviderSpec(id="local", config={"inferenceBatchSize": 1, "threads": 1}))
    alone = asyncio.run(one_by_one.embed(texts)).vectors
    np.testing.assert_allclose(grouped, alone, rtol=0, atol=1e-6)


def test_long_texts_are_truncated_not_rejected(local: LocalEmbedder) -> None:
    long_text = "word " * 2000
    vectors = asyncio.run(local.embed([long_text])).vectors
    assert vectors.shape == (1, 384) and np.all(np.isfinite(vectors))
    tokens = asyncio.run(local.embed_tokens([long_text]))[0]
    assert len(tokens.tokens) == 254  # 256 minus [CLS] and [SEP]


def test_embed_tokens_are_contextual_without_special_tokens(local: LocalEmbedder) -> None:
    first, second = asyncio.run(local.embed_tokens(["The river bank flooded.", "The bank approved my loan."]))
    assert first.tokens == ("the", "river", "bank", "flooded", ".")
    assert "[CLS]" not in second.tokens and "[SEP]" not in second.tokens
    assert first.vectors.shape == (5, 384)
    bank_river = first.vectors[first.tokens.index("bank")]
    bank_money = second.vectors[second.tokens.index("bank")]
    assert cosine(bank_river, bank_money) < 0.99  # same word, different context, different vector
    empty = asyncio.run(local.embed_tokens([""]))[0]
    assert empty.tokens == () and empty.vectors.shape == (0, 384)


def test_inference_leaves_the_event_loop_free(local: LocalEmbedder) -> None:
    async def scenario() -> int:
        ticks = 0
        task = asyncio.create_task(local.embed([f"sentence {i} about a topic" for i in range(300)]))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.001)
        await task
        return ticks

    assert asyncio.run(scenario()) > 5


def test_cls_pooling_and_no_normalisation_change_the_vectors(local: LocalEmbedder) -> None:
    config = {"modelPath": str(bundled_model_path()), "tokenizerPath": str(bundled_tokenizer_path())}
    cls = make_local(ProviderSpec(id="local:minilm", config={**config, "pooling": "cls", "normalize": False}))
    plain = asyncio.run(local.embed([PARIS])).vectors[0]
    other = asyncio.run(cls.embed([PARIS])).vectors[0]
    assert abs(float(np.linalg.norm(other)) - 1.0) > 1e-3
    assert not np.allclose(plain, other / np.linalg.norm(other), atol=1e-3)
    assert cls.cache_identity() != local.cache_identity()


def test_altered_model_is_refused(tmp_path: Path) -> None:
    config = {
        "modelPath": str(bundled_model_path()),
        "tokenizerPath": str(bundled_tokenizer_path()),
        "sha256": "0" * 64,
    }
    provider = make_local(ProviderSpec(id="local", config=config))
    with pytest.raises(ModelAssetError, match="altered or truncated"):
        asyncio.run(provider.embed(["x"]))


def test_the_sha256_check_runs_once_per_process_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model.onnx"
    shutil.copyfile(bundled_model_path(), model)
    hashed: list[Path] = []

    def counting_sha256(path: Path) -> str:
        hashed.append(path)
        return file_sha256(path)

    monkeypatch.setattr(local_module, "file_sha256", counting_sha256)
    config = {"modelPath": str(model), "tokenizerPath": str(bundled_tokenizer_path())}
    config["sha256"] = BUNDLED_MODEL_SHA256
    first = make_local(ProviderSpec(id="local:copy", config=config))
    second = make_local(ProviderSpec(id="local:copy", config={**config, "threads": 1}))
    for provider in (first, second):
        assert asyncio.run(provider.embed([PARIS])).vectors.shape == (1, 384)
    assert hashed.count(model) == 1  # two providers, two loads, one hash
    with model.open("ab") as handle:  # altered after the check: a new provider hashes it again
        handle.write(b"\0")
    with pytest.raises(ModelAssetError, match="altered or truncated"):
        asyncio.run(make_local(ProviderSpec(id="local:copy", config=config)).embed([PARIS]))
    assert hashed.count(model) == 2


def test_missing_model_is_refused(tmp_path: Path) -> None:
    config = {"modelPath": "missing.onnx", "tokenizerPath": str(bundled_tokenizer_path())}
    provider = make_local(ProviderSpec(id="local", config=config, base_dir=str(tmp_path)))
    assert provider.settings.model_path == tmp_path / "missing.onnx"  # relative to the config's folder
    with pytest.raises(ModelAssetError, match="missing"):
        asyncio.run(provider.embed(["x"]))


def test_a_file_that_is_not_onnx_is_a_model_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.onnx"
    bogus.write_bytes(b"not a model")
    config = {"modelPath": str(bogus), "tokenizerPath": str(bundled_tokenizer_path())}
    with pytest.raises(ModelAssetError, match="not a loadable ONNX model"):
        asyncio.run(make_local(ProviderSpec(id="local:bogus", config=config)).embed(["x"]))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ProviderSpec(id="local:mine"), "needs modelPath and tokenizerPath"),
        (ProviderSpec(id="local", config={"modelPath": "m.onnx"}), "needs tokenizerPath"),
        (ProviderSpec(id="local", config={"pooling": "max"}), "pooling must be"),
        (ProviderSpec(id="local", config={"maxLength": 0}), "maxLength must be a positive integer"),
        (ProviderSpec(id="local", config={"modelpath": "x"}), "unknown key"),
    ],
)
def test_config_errors(spec: ProviderSpec, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_local(spec)


def test_registry_capabilities_are_true(local: LocalEmbedder) -> None:
    for capability in ("embedding", "text", "similarity", "tokens"):
        assert supports(local, capability) == (capability in capabilities_of("local"))
    assert capabilities_of("local:other") == capabilities_of("local")
