"""The suite-wide embedding store: every text embedded once per provider, in bulk, through the cache.

Before scoring, the runner hands :meth:`EmbeddingStore.prefetch` every text any assertion will embed.
The store groups them per provider (:func:`~evalh.providers.identity.provider_key`; cache keys from
:func:`~evalh.providers.identity.cache_identity`: id, model, URL, headers, dimensions; keys only hashed),
drops duplicates and texts already in memory, reads the SQLite cache, and sends the rest in batches of the
provider's ``batch_size`` (texts sorted by length), each batch through the provider's one concurrency
gate (shared with its completions, see ``ProviderPool.gate``). N unique texts cost ceil(N / batch)
requests. Assertions then read vectors with :meth:`embed` (memory hits); a text nobody
declared is fetched on demand the same way, and concurrent requests for one text share one call.

A failed batch is remembered: the assertions needing those texts get the same error (an ERROR row)
without calling the provider again. Usage (requests, texts, tokens, cache hits, latency, cost) is kept
per provider for the run summary.
"""

from __future__ import annotations

import asyncio
import json
import struct
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from evalh.assertions.base import EmbedRequest
from evalh.common.vectors import Deferred, fit_rows
from evalh.errors import EvalhError, ProviderError
from evalh.model import NO_USAGE, ProviderSpec, Usage
from evalh.providers.base import (
    Batched,
    EmbeddingProvider,
    Embeddings,
    Provider,
    Similarities,
    SimilarityProvider,
    TokenEmbedding,
    TokenEmbeddingProvider,
    supports,
)
from evalh.providers.identity import UsageBook, cache_identity, load_hash_key, provider_key
from evalh.runner.cache import Cache

if TYPE_CHECKING:
    import numpy as np
else:
    np = Deferred("numpy")  # every run builds the store; only a run that embeds loads numpy (0.1 s)

__all__ = ["DEFAULT_BATCH_SIZE", "EmbeddingStore", "ProviderSource"]

DEFAULT_BATCH_SIZE = 64


class ProviderSource(Protocol):
    """What the store needs from the runner's provider pool: built providers and their gates."""

    def get(self, spec: ProviderSpec) -> Provider: ...

    def gate(self, spec: ProviderSpec) -> asyncio.Semaphore: ...


@dataclass(frozen=True)
class _Kind:
    """One granularity: how to call the provider for a batch and how to (de)serialise one item."""

    name: str  # "embedding", "tokens", "similarity" (also the cache namespace)
    capability: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]


def _encode_vector(vector: Any) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def _decode_vector(blob: bytes) -> Any:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def _encode_tokens(item: TokenEmbedding) -> bytes:
    header = json.dumps({"tokens": list(item.tokens), "dim": int(item.vectors.shape[1])}).encode("utf-8")
    return struct.pack("<I", len(header)) + header + np.asarray(item.vectors, dtype="<f4").tobytes()


def _decode_tokens(blob: bytes) -> TokenEmbedding:
    (length,) = struct.unpack_from("<I", blob)
    header = json.loads(blob[4 : 4 + length].decode("utf-8"))
    vectors = np.frombuffer(blob[4 + length :], dtype="<f4").astype(np.float32)
    return TokenEmbedding(tokens=tuple(header["tokens"]), vectors=vectors.reshape(-1, int(header["dim"])))


_KINDS = {
    "embedding": _Kind("embedding", "embedding", _encode_vector, _decode_vector),
    "tokens": _Kind("tokens", "tokens", _encode_tokens, _decode_tokens),
    "similarity": _Kind(
        "similarity",
        "similarity",
        lambda score: struct.pack("<d", float(score)),
        lambda blob: struct.unpack("<d", blob)[0],
    ),
}
_GRANULARITY = {"sentence": "embedding", "embedding": "embedding", "tokens": "tokens"}


def _sound_texts(texts: Sequence[str], vectors: Sequence[Any]) -> list[str]:
    """The texts whose vector is fit to compare (:func:`~evalh.common.vectors.fit_rows`): two rows of one
    :meth:`EmbeddingStore.embed` have the same length, or it raises."""
    return [text for text, ok in zip(texts, fit_rows(vectors), strict=True) if ok]


def _pair_key(pair: tuple[str, str]) -> str:
    return json.dumps(list(pair), ensure_ascii=False)


@dataclass
class _Slot:
    """Everything the store holds for one provider identity."""

    provider: Provider
    spec: ProviderSpec  # the usage key; its label or id names it in messages
    identity: Mapping[str, Any]
    cached: bool  # the cache may hold its vectors (its config does not say cache: false)
    memory: dict[str, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))
    failures: dict[str, dict[str, EvalhError]] = field(default_factory=lambda: defaultdict(dict))
    pending: dict[str, dict[str, asyncio.Future[None]]] = field(default_factory=lambda: defaultdict(dict))
    capabilities: set[str] = field(default_factory=set)  # checked already (a Protocol isinstance is slow)
    sound: set[str] = field(default_factory=set)  # texts whose embedding is fit to compare (_sound_texts)


class EmbeddingStore:
    """Suite-wide, deduplicated, batched and cached embeddings, token vectors and similarities."""

    def __init__(self, pool: ProviderSource, cache: Cache, usage: UsageBook | None = None) -> None:
        self.pool = pool
        self.cache = cache
        self._slots: dict[str, _Slot] = {}
        self._usage = usage or UsageBook()
        self._hash_key: bytes | None = None

    @property
    def cache_hash_key(self) -> bytes:
        """The key of the secrets' hashes in cache identities, kept beside the cache file."""
        if self._hash_key is None:
            directory = self.cache.path.parent if self.cache.enabled and self.cache.path else None
            self._hash_key = load_hash_key(directory)
        return self._hash_key

    # -- public API --------------------------------------------------------------------------------

    async def prefetch(self, requests: Sequence[EmbedRequest]) -> None:
        """Embed every requested text once per provider before scoring. Failures are remembered, not
        raised: each assertion that needs a failed text reports the error itself."""
        grouped: dict[tuple[str, str], tuple[ProviderSpec, dict[str, None]]] = {}
        for request in requests:
            kind = _GRANULARITY.get(request.granularity, "embedding")
            key = (provider_key(request.provider), kind)
            entry = grouped.setdefault(key, (request.provider, {}))
            entry[1].update(dict.fromkeys(request.texts))
        await asyncio.gather(
            *(self._prefetch_one(spec, kind, list(texts)) for (_, kind), (spec, texts) in grouped.items())
        )

    async def embed(self, provider: ProviderSpec, texts: Sequence[str]) -> Embeddings:
        """Vectors of ``texts`` in order (a 2-D float32 array); ``usage`` is what this call cost."""
        slot = self._slot(provider, "embedding")
        memory = slot.memory["embedding"]
        usage = NO_USAGE  # what a read from memory costs
        if not all(text in memory for text in texts):  # else prefetched, the usual case: nothing to wait for
            usage = await self._ensure(slot, _KINDS["embedding"], list(texts))
        rows = [memory[text] for text in texts]
        if not rows:
            return Embeddings(vectors=np.zeros((0, 0), dtype=np.float32), usage=usage)
        dimensions = sorted({row.shape[0] for row in rows})
        if len(dimensions) > 1:
            raise ProviderError(
                f"dimension mismatch: {provider.id} returned vectors of {dimensions} dimensions",
                where=provider.path or None,
            )
        # rows of one length: np.array makes the matrix np.stack does, in a fifth of its time (8 us)
        return Embeddings(vectors=np.array(rows), usage=usage, checked=slot.sound.issuperset(texts))

    async def embed_tokens(self, provider: ProviderSpec, texts: Sequence[str]) -> list[TokenEmbedding]:
        """Contextual token vectors of ``texts`` in order."""
        slot = self._slot(provider, "tokens")
        await self._ensure(slot, _KINDS["tokens"], list(texts))
        memory = slot.memory["tokens"]
        return [memory[text] for text in texts]

    async def similarity(self, provider: ProviderSpec, pairs: Sequence[tuple[str, str]]) -> Similarities:
        """Provider-computed cosine similarity of each (a, b) pair, in order."""
        slot = self._slot(provider, "similarity")
        keys = [_pair_key(pair) for pair in pairs]
        usage = await self._ensure(slot, _KINDS["similarity"], keys)
        memory = slot.memory["similarity"]
        return Similarities(scores=tuple(float(memory[key]) for key in keys), usage=usage)

    def usage_by_provider(self) -> dict[str, Usage]:
        """Requests, texts, tokens, cache hits, latency and cost, per provider (label or id)."""
        return self._usage.by_name()

    # -- internals ---------------------------------------------------------------------------------

    async def _prefetch_one(self, spec: ProviderSpec, kind: str, texts: list[str]) -> None:
        try:
            slot = self._slot(spec, kind)
            if kind == "embedding" and not supports(slot.provider, "embedding"):
                return  # a similarity-only provider: the assertion asks for pairs itself
            await self._ensure(slot, _KINDS[kind], texts)
        except EvalhError:
            return  # remembered in the slot, or re-raised when the assertion builds the provider

    def _slot(self, spec: ProviderSpec, kind: str) -> _Slot:
        key = provider_key(spec)
        capability = _KINDS[kind].capability
        known = self._slots.get(key)
        if known is not None and capability in known.capabilities:  # every row after the first
            return known
        provider = self.pool.get(spec)
        if not supports(provider, capability):
            what = {"embedding": "embed texts", "tokens": "give token vectors", "similarity": "score pairs"}
            raise ProviderError(
                f"provider {spec.id!r} cannot {what[capability]}",
                where=spec.path or None,
                hint="Choose a provider with that capability (`evalh list providers`)",
            )
        if key not in self._slots:
            identity = {"provider": cache_identity(provider, spec, self.cache_hash_key)}
            cached = spec.config.get("cache") is not False
            self._slots[key] = _Slot(provider=provider, spec=spec, identity=identity, cached=cached)
        self._slots[key].capabilities.add(capability)
        return self._slots[key]

    async def _ensure(self, slot: _Slot, kind: _Kind, texts: list[str]) -> Usage:
        """Make every text available in ``slot.memory``; raise the remembered error for a failed one."""
        memory, pending = slot.memory[kind.name], slot.pending[kind.name]
        wanted = [text for text in dict.fromkeys(texts) if text not in memory]
        self._raise_failure(slot, kind, wanted)
        waiting = {id(pending[t]): pending[t] for t in wanted if t in pending}
        fresh = [text for text in wanted if text not in pending]
        usage = Usage()
        if fresh:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            pending.update(dict.fromkeys(fresh, done))
            try:
                usage = await self._fetch(slot, kind, fresh)
            finally:
                for text in fresh:
                    pending.pop(text, None)
                done.set_result(None)
        for future in waiting.values():
            await future
        self._raise_failure(slot, kind, [text for text in wanted if text not in memory])
        missing = [text for text in wanted if text not in memory]
        if missing:
            raise ProviderError(f"{slot.spec.display} returned nothing for {len(missing)} text(s)")
        return usage

    @staticmethod
    def _raise_failure(slot: _Slot, kind: _Kind, texts: Sequence[str]) -> None:
        failures = slot.failures[kind.name]
        for text in texts:
            if text in failures:
                raise failures[text]

    async def _fetch(self, slot: _Slot, kind: _Kind, texts: list[str]) -> Usage:
        """Read the cache, then call the provider in batches for the rest; fill memory and the cache."""
        # no keys without a cache: each is two sha256 (0.1 s of 5,452 texts, Cache.keyer)
        use_cache = self.cache.enabled and slot.cached
        key_of = Cache.keyer(slot.identity) if use_cache else None
        keys = {text: key_of(text) for text in texts} if key_of else {}
        cached: dict[str, bytes] = {}
        if keys:
            cached = await asyncio.to_thread(self.cache.get_many, kind.name, list(keys.values()))
        memory = slot.memory[kind.name]
        read = [text for text, key in keys.items() if key in cached]
        for text in read:
            memory[text] = kind.decode(cached[keys[text]])
        if kind.name == "embedding":
            slot.sound.update(_sound_texts(read, [memory[text] for text in read]))
        hits = Usage(cached=len(read))
        missing = sorted((text for text in texts if text not in memory), key=len)
        size = slot.provider.batch_size if isinstance(slot.provider, Batched) else DEFAULT_BATCH_SIZE
        size = max(1, size or DEFAULT_BATCH_SIZE)
        batches = [missing[start : start + size] for start in range(0, len(missing), size)]
        semaphore = self.pool.gate(slot.spec)
        # each batch that succeeds adds its entries; all are written in one transaction at the end, as
        # 86 transactions of 64 vectors cost 0.15 s of CPU where one costs 0.04 s (C_5000)
        entries: dict[str, bytes] = {}
        try:
            outcomes = await asyncio.gather(
                *(self._call_batch(slot, kind, batch, keys, semaphore, entries) for batch in batches),
                return_exceptions=True,
            )
        except BaseException:  # a stopped run: keep the vectors fetched so far
            self.cache.put_many(kind.name, entries)
            raise
        if entries:
            await asyncio.to_thread(self.cache.put_many, kind.name, entries)
        total = hits
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, EvalhError):
                    raise outcome
                continue
            total = total + outcome
        self._usage.add(slot.spec, hits)
        errors = [outcome for outcome in outcomes if isinstance(outcome, EvalhError)]
        if errors:
            raise errors[0]
        return total

    async def _call_batch(
        self,
        slot: _Slot,
        kind: _Kind,
        batch: list[str],
        keys: Mapping[str, str],
        semaphore: asyncio.Semaphore,
        entries: dict[str, bytes],
    ) -> Usage:
        async with semaphore:
            started = time.perf_counter()
            try:
                items, usage = await self._call_provider(slot, kind, batch)
            except EvalhError as error:
                slot.failures[kind.name].update(dict.fromkeys(batch, error))
                self._usage.add(slot.spec, Usage(requests=1))
                raise
            except Exception as error:  # a provider bug: remember it as a provider error for these texts
                failure = ProviderError(f"{slot.spec.display} failed: {type(error).__name__}: {error}")
                slot.failures[kind.name].update(dict.fromkeys(batch, failure))
                raise failure from error
            elapsed = (time.perf_counter() - started) * 1000.0
        usage = Usage(
            prompt_tokens=usage.prompt_tokens,
            total_tokens=usage.total_tokens or usage.prompt_tokens,
            requests=usage.requests or 1,
            texts=len(batch),
            cost=usage.cost,
            latency_ms=elapsed,
        )
        memory = slot.memory[kind.name]
        memory.update(zip(batch, items, strict=True))
        if kind.name == "embedding":
            slot.sound.update(_sound_texts(batch, items))
        if keys:  # made only when this provider's vectors go in the cache
            entries.update((keys[text], kind.encode(item)) for text, item in zip(batch, items, strict=True))
        self._usage.add(slot.spec, usage)
        return usage

    @staticmethod
    async def _call_provider(slot: _Slot, kind: _Kind, batch: list[str]) -> tuple[list[Any], Usage]:
        provider = slot.provider
        if kind.name == "embedding" and isinstance(provider, EmbeddingProvider):
            result = await provider.embed(batch)
            vectors = np.asarray(result.vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(batch):
                raise ProviderError(
                    f"{slot.spec.display} returned {vectors.shape[0] if vectors.ndim else 0} vectors for "
                    f"{len(batch)} texts"
                )
            return list(vectors), result.usage
        if kind.name == "tokens" and isinstance(provider, TokenEmbeddingProvider):
            tokens = await provider.embed_tokens(batch)
            if len(tokens) != len(batch):
                raise ProviderError(
                    f"{slot.spec.display} returned token vectors for {len(tokens)} of {len(batch)} texts"
                )
            count = sum(len(item.tokens) for item in tokens)
            return tokens, Usage(prompt_tokens=count, total_tokens=count)
        if kind.name == "similarity" and isinstance(provider, SimilarityProvider):
            pairs = [(first, second) for first, second in map(json.loads, batch)]
            scores = await provider.similarity(pairs)
            if len(scores.scores) != len(batch):
                raise ProviderError(
                    f"{slot.spec.display} returned {len(scores.scores)} scores for {len(batch)} pairs"
                )
            return list(scores.scores), scores.usage
        raise ProviderError(f"provider {slot.spec.id!r} cannot serve {kind.name} requests")  # _slot checks
