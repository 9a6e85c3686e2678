"""Benchmark of evalh's semantic scoring: requests saved by suite-wide batching, local throughput, cache.

    python benchmarks/bench_similar.py [--tests 5000] [--local-texts 1000] [--repeats 3] [--skip-local]
        [--sweep-texts 4000] [--server-latency-ms 100] [--sweep-batches 32,64,256]
        [--sweep-concurrency 1,4,16]

1. ``--tests`` tests with one ``similar`` assertion each (output + value, 30% of the texts repeated),
   against an OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1: the requests evalh sent (promptfoo
   sends two per assertion) and evalh's wall time for the whole run.
2. On the bundled local model, ``--local-texts`` unique texts: evalh's end-to-end run (model load,
   embedding store, scoring) against raw onnxruntime + tokenizers on the same texts (load, batches of 32
   sorted by length, mean pooling), written two ways: onnxruntime's defaults (one run at a time on all
   its intra-op threads) and evalh's scheme by hand (the batches on one thread per core, one intra-op
   thread each). The three alternate ``--repeats`` times, since a shared machine's load swings wall
   times; each round's ratio (evalh's throughput over the faster raw one, by wall time and by CPU time)
   and their medians are printed, with the best wall and CPU time of each; target >= 0.9x.
3. The same local run again with a warm cache against the cold one; target >= 20x.
4. ``--sweep-texts`` unique texts through a loopback ``/v1/embeddings`` server that takes
   ``--server-latency-ms`` per request (a stand-in for TEI, vLLM or Ollama), for each ``batchSize`` x
   ``maxConcurrency`` of ``--sweep-batches`` x ``--sweep-concurrency``: requests, wall time, the ideal
   (ceil(requests / maxConcurrency) x latency) and texts per second. ``--skip-local`` runs 1 and 4 only.

Every run uses a fresh temporary cache directory; nothing touches the user's cache.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np

from evalh.model import (
    AssertionSpec,
    ProviderChoice,
    ProviderSpec,
    RunOptions,
    RunRecord,
    Status,
    Suite,
    TestCase,
)
from evalh.providers.fake import fake_vector
from evalh.providers.local import available_cores, bundled_model_path, bundled_tokenizer_path
from evalh.runner.execute import run_suite

WORDS = str.split(
    "the customer asked about a refund for the order shipped last week and the agent explained policy "
    "delivery times vary by region while support is available every day through chat email or phone "
    "our product stores data securely encrypts backups and offers exports in several common formats "
    "pricing depends on the plan chosen with discounts for annual billing and for non profit groups"
)


def make_texts(count: int, repeated: float, seed: int) -> list[str]:
    """``count`` sentences of 6-40 words, ``repeated`` of them copies of earlier ones."""
    generator = random.Random(seed)
    unique_count = max(1, round(count * (1 - repeated)))
    unique = [
        " ".join(generator.choice(WORDS) for _ in range(generator.randint(6, 40))) + f" (ref {i})."
        for i in range(unique_count)
    ]
    texts = unique + [generator.choice(unique) for _ in range(count - unique_count)]
    generator.shuffle(texts)
    return texts


def similar_suite(texts: list[str], provider: ProviderSpec | None) -> Suite:
    choice = ProviderChoice(default=provider) if provider else None
    tests = tuple(
        TestCase(
            index=i,
            output=texts[2 * i],
            has_output=True,
            asserts=(AssertionSpec(type="similar", value=texts[2 * i + 1], threshold=0.5, provider=choice),),
        )
        for i in range(len(texts) // 2)
    )
    return Suite(tests=tests)


def timed_run(suite: Suite, *, cache: bool) -> tuple[RunRecord, float]:
    started = time.perf_counter()
    result = run_suite(suite, RunOptions(cache=cache, max_concurrency=8))
    return result, time.perf_counter() - started


# -- 1. an OpenAI-compatible server on 127.0.0.1 ------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def base64_of(vector_json: str) -> str:
    """A vector's JSON floats as OpenAI's ``encoding_format: "base64"`` (little-endian float32), quoted."""
    vector = np.asarray(json.loads(vector_json), dtype="<f4")
    return json.dumps(base64.b64encode(vector.tobytes()).decode("ascii"))


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: avoid the delayed-ACK stall
    counter: ClassVar[Any] = None  # a multiprocessing.Value: requests served
    latency_s: ClassVar[float] = 0.0  # how long each request takes, as a real model server's would

    @staticmethod
    @functools.lru_cache(maxsize=65536)
    def vector_json(text: str) -> str:
        # Encoded once per text: the stand-in's own JSON work must not be what the sweep measures.
        return json.dumps(fake_vector(text, 384).tolist())

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if self.counter is not None:
            with self.counter.get_lock():
                self.counter.value += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        # like OpenAI: little-endian float32 in base64 when asked (evalh asks), JSON floats otherwise
        as_base64 = body.get("encoding_format") == "base64"
        vectors = [base64_of(self.vector_json(t)) if as_base64 else self.vector_json(t) for t in texts]
        rows = ",".join(f'{{"index": {i}, "embedding": {v}}}' for i, v in enumerate(vectors))
        tokens = sum(len(t.split()) for t in texts)
        usage = f'{{"prompt_tokens": {tokens}, "total_tokens": {tokens}}}'
        payload = f'{{"data": [{rows}], "usage": {usage}}}'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _serve(ports: Any, counter: Any, latency_s: float) -> None:
    """The server process: its JSON encoding must not compete with evalh for the GIL."""
    _EmbeddingsHandler.counter = counter
    _EmbeddingsHandler.latency_s = latency_s
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    server.daemon_threads = True
    server.request_queue_size = 256
    ports.put(server.server_address[1])
    server.serve_forever()


@contextlib.contextmanager
def embeddings_server(latency_s: float = 0.0) -> Iterator[tuple[str, Any]]:
    """(base URL, request counter) of an OpenAI-compatible /v1/embeddings server in its own process."""
    counter = multiprocessing.Value("i", 0)
    ports: Any = multiprocessing.Queue()
    process = multiprocessing.Process(target=_serve, args=(ports, counter, latency_s), daemon=True)
    process.start()
    try:
        yield f"http://127.0.0.1:{ports.get(timeout=30)}/v1", counter
    finally:
        process.terminate()
        process.join()


def bench_http(tests: int) -> None:
    texts = make_texts(2 * tests, repeated=0.3, seed=1)
    unique = len(set(texts))
    timed_run(similar_suite(["warm up", "the imports"], ProviderSpec(id="fake")), cache=False)
    with embeddings_server() as (url, counter):
        config = {"apiBaseUrl": url, "apiKey": "sk-bench"}
        spec = ProviderSpec(id="openai:embedding:text-embedding-3-small", config=config)
        result, seconds = timed_run(similar_suite(texts, spec), cache=False)
        sent = counter.value
    errors = result.count(Status.ERROR)
    passed = result.count(Status.PASS)
    print(
        f"1. {tests} tests with `similar` ({2 * tests} texts, {unique} unique) via a loopback OpenAI server"
    )
    print(
        f"   requests sent by evalh: {sent} (ceil({unique}/64) = {math.ceil(unique / 64)}); "
        f"promptfoo would send {2 * tests}"
    )
    print(f"   evalh wall time: {seconds:.2f} s for the whole run ({passed} passed, {errors} errors)")


def bench_sweep(count: int, latency_ms: float, batches: list[int], levels: list[int]) -> None:
    """Embedding throughput through a server taking ``latency_ms`` a request, per batchSize and
    maxConcurrency: what those two settings buy against a remote model server."""
    texts = make_texts(count, repeated=0.0, seed=3)
    print(
        f"4. {count} unique texts (`similar`, {count // 2} tests) via a loopback /v1/embeddings server "
        f"taking {latency_ms:g} ms a request; load average {os.getloadavg()[0]:.1f}"
    )
    floor = timed_run(similar_suite(texts, ProviderSpec(id="fake:384")), cache=False)[1]
    print(f"   the same suite on the in-process `fake` embedder (no HTTP): {floor:.2f} s")
    print("   batchSize maxConcurrency requests  wall s  ideal s  texts/s")
    with embeddings_server(latency_ms / 1000) as (url, counter):
        warm = {"apiBaseUrl": url, "apiKey": "sk-bench", "batchSize": 256, "maxConcurrency": 16}
        timed_run(similar_suite(texts, ProviderSpec(id="openai:embedding:e", config=warm)), cache=False)
        for batch in batches:
            for level in levels:
                config = {"apiBaseUrl": url, "apiKey": "sk-bench", "batchSize": batch}
                spec = ProviderSpec(id="openai:embedding:e", config={**config, "maxConcurrency": level})
                before = counter.value
                result, seconds = timed_run(similar_suite(texts, spec), cache=False)
                requests = counter.value - before
                ideal = math.ceil(requests / level) * latency_ms / 1000
                assert result.count(Status.ERROR) == 0, "the loopback server failed a request"
                print(
                    f"   {batch:>9} {level:>14} {requests:>8} {seconds:>7.2f} {ideal:>8.2f} "
                    f"{count / seconds:>8.0f}"
                )


# -- 2 and 3. the bundled local model -------------------------------------------------------------------


def raw_onnxruntime(texts: list[str], *, threaded: bool) -> float:
    """Seconds for raw onnxruntime + tokenizers to embed ``texts`` (load included): batches of 32 sorted
    by length, mean pooling. ``threaded``: evalh's scheme written out by hand (one single-threaded
    session, the batches spread over one thread per core); else onnxruntime's defaults (one run at a
    time, its intra-op threads on every core)."""
    import onnxruntime
    from tokenizers import Tokenizer

    started = time.perf_counter()
    tokenizer = Tokenizer.from_file(str(bundled_tokenizer_path()))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    options = onnxruntime.SessionOptions()
    if threaded:
        options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(bundled_model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )
    encodings = tokenizer.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))

    def run(batch: list[list[int]]) -> Any:
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, item in enumerate(batch):
            ids[row, : len(item)] = item
            mask[row, : len(item)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    batches = [[encodings[i].ids for i in order[start : start + 32]] for start in range(0, len(order), 32)]
    if threaded:
        with ThreadPoolExecutor(available_cores()) as executor:
            list(executor.map(run, batches))
    else:
        for batch in batches:
            run(batch)
    return time.perf_counter() - started


def _timed_cpu(work: Callable[[], float]) -> tuple[float, float]:
    """(wall seconds ``work`` reports, CPU seconds of this process meanwhile, every thread)."""
    cpu = time.process_time()
    return work(), time.process_time() - cpu


def bench_local(count: int, repeats: int) -> None:
    texts = make_texts(count, repeated=0.0, seed=2)
    suite = similar_suite(texts, None)  # the default provider: local
    timed_run(similar_suite(["warm up", "the imports"], ProviderSpec(id="fake")), cache=False)
    contenders: dict[str, Callable[[], float]] = {
        "raw onnxruntime, its defaults": lambda: raw_onnxruntime(texts, threaded=False),
        "raw onnxruntime, batches on threads": lambda: raw_onnxruntime(texts, threaded=True),
        "evalh end to end": lambda: timed_run(suite, cache=False)[1],
    }
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(repeats):  # alternate: the machine is shared and its load swings
        for name, work in contenders.items():
            runs[name].append(_timed_cpu(work))
    raw_names, evalh_runs = list(contenders)[:2], runs["evalh end to end"]
    # per round: evalh's throughput over the faster raw one's (wall), and the same for CPU per text
    walls = [min(runs[n][i][0] for n in raw_names) / evalh_runs[i][0] for i in range(repeats)]
    cpus = [min(runs[n][i][1] for n in raw_names) / evalh_runs[i][1] for i in range(repeats)]
    print(
        f"2. local model, {count} unique texts ({len(texts) // 2} tests) on {available_cores()} cores, "
        f"model load included, {repeats} alternating rounds, load average {os.getloadavg()[0]:.1f}"
    )
    for name, measured in runs.items():
        wall, cpu = min(measured)
        print(f"   {name:36} best {wall:6.2f} s = {count / wall:5.0f} texts/s ({cpu:.1f} s CPU)")
    print(
        f"   evalh throughput / the faster raw, per round: {', '.join(f'{r:.2f}' for r in walls)}; "
        f"median {statistics.median(walls):.2f}x (target >= 0.9x)"
    )
    print(
        f"   the same in CPU per text (steadier under load): {', '.join(f'{r:.2f}' for r in cpus)}; "
        f"median {statistics.median(cpus):.2f}x"
    )
    cold_result, cold_s = timed_run(suite, cache=True)
    warm_result, warm_s = timed_run(suite, cache=True)
    hits = sum(u.usage.cached for u in warm_result.provider_usage)
    same = [r.score for r in cold_result.results] == [r.score for r in warm_result.results]
    print(f"3. cold cache {cold_s:.2f} s, warm cache {warm_s:.3f} s ({hits} cache hits, same scores: {same})")
    print(f"   warm speed-up: {cold_s / warm_s:.1f}x (target >= 20x)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tests", type=int, default=5000)
    parser.add_argument("--local-texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-local", action="store_true", help="only the HTTP parts (1 and 4)")
    parser.add_argument("--sweep-texts", type=int, default=4000, help="0: no sweep")
    parser.add_argument("--server-latency-ms", type=float, default=100.0)
    parser.add_argument("--sweep-batches", default="32,64,256")
    parser.add_argument("--sweep-concurrency", default="1,4,16")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache_dir:
        os.environ["EVALH_CACHE_DIR"] = cache_dir
        print(f"evalh similarity benchmark on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
        bench_http(arguments.tests)
        if not arguments.skip_local:
            bench_local(arguments.local_texts, arguments.repeats)
        if arguments.sweep_texts:
            batches = [int(b) for b in arguments.sweep_batches.split(",")]
            levels = [int(c) for c in arguments.sweep_concurrency.split(",")]
            bench_sweep(arguments.sweep_texts, arguments.server_latency_ms, batches, levels)


if __name__ == "__main__":
    main()
