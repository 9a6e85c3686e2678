"""The local model spreads a call's batches over threads (both cores): same vectors, no cost when small.

The bundled model runs for real. Concurrency is shown by a barrier two batches must reach together
(a serial path would break it), never by timing.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest

from evalh.model import ProviderSpec
from evalh.providers.local import LocalEmbedder, available_cores, make_local, worker_count

WORDS = (
    *("refund", "order", "shipped", "policy", "delivery", "region", "support"),
    *("chat", "email", "phone", "data", "export", "plan"),
)


def _texts(count: int) -> list[str]:
    # Lengths from 1 to 40 words, so the length-sorted batches differ in width.
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(1 + i % 40)) + f" {i}" for i in range(count)]


def _local(threads: int) -> LocalEmbedder:
    return make_local(ProviderSpec(id="local", config={"threads": threads, "inferenceBatchSize": 8}))


@pytest.fixture(scope="module")
def serial() -> LocalEmbedder:
    return _local(1)


@pytest.fixture(scope="module")
def parallel() -> LocalEmbedder:
    return _local(2)


def test_parallel_sentence_vectors_equal_the_serial_ones(
    serial: LocalEmbedder, parallel: LocalEmbedder
) -> None:
    texts = _texts(90)  # 12 batches or more
    one = asyncio.run(serial.embed(texts))
    two = asyncio.run(parallel.embed(texts))
    assert one.vectors.shape == (90, 384)
    assert np.array_equal(one.vectors, two.vectors)  # the same batches, so bit for bit
    assert (one.usage.texts, one.usage.prompt_tokens) == (two.usage.texts, two.usage.prompt_tokens)


def test_parallel_token_vectors_equal_the_serial_ones(serial: LocalEmbedder, parallel: LocalEmbedder) -> None:
    texts = _texts(40)
    one = asyncio.run(serial.embed_tokens(texts))
    two = asyncio.run(parallel.embed_tokens(texts))
    assert [item.tokens for item in one] == [item.tokens for item in two]
    assert all(np.array_equal(a.vectors, b.vectors) for a, b in zip(one, two, strict=True))
    assert one[0].tokens == ("ref", "##und", "0")  # still in input order


def test_a_call_of_several_batches_runs_them_at_once(parallel: LocalEmbedder) -> None:
    model = parallel.load()
    encoded = parallel._encode(model, _texts(32))  # 4 or more batches (of 8 rows, or fewer when long)
    sizes = [len(batch) for batch in parallel._plan(encoded)]
    together = threading.Barrier(2, timeout=60)  # only reached if two batches run at the same time
    names: list[str] = []

    def per_batch(indices: list[int], hidden: Any, mask: Any) -> int:
        names.append(threading.current_thread().name)
        if len(names) <= 2:
            together.wait()
        return len(indices)

    assert parallel._map_batches(model, encoded, per_batch) == sizes and len(sizes) >= 4
    assert len(set(names)) == 2 and all(name.startswith("evalh-local-model") for name in names)


def test_a_call_of_one_batch_runs_inline(parallel: LocalEmbedder) -> None:
    model = parallel.load()
    encoded = parallel._encode(model, _texts(8))
    seen: list[threading.Thread] = []

    def per_batch(indices: list[int], hidden: Any, mask: Any) -> int:
        seen.append(threading.current_thread())
        return len(indices)

    assert parallel._map_batches(model, encoded, per_batch) == [8]
    assert seen == [threading.current_thread()]  # no thread started for a small suite


def test_worker_count() -> None:
    assert worker_count(1, 0) == 1  # one batch: inline, whatever the cores
    assert worker_count(0, 4) == 1
    assert worker_count(12, 2) == 2
    assert worker_count(3, 8) == 3  # never more threads than batches
    assert worker_count(50, 0) == available_cores()
