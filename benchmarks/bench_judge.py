"""Throughput of model-graded tests (llm-rubric) against a local OpenAI-compatible grader with fixed latency.

Starts a grader server in a separate process (so its threads do not share our GIL) that answers every
``/v1/chat/completions`` call after ``--latency-ms`` with a JSON verdict, then runs a suite of
``--tests`` recorded outputs, each with one ``llm-rubric``, through ``evalh.runner`` (real provider, HTTP
layer, grading and scoring; completion cache off) at each ``--concurrency``. Prints wall time against the
ideal ``tests × latency / concurrency``, the ratio (target <= 1.2), and evalh's own CPU time per test
(when ``cpu ms/test`` × concurrency approaches the latency, the client, not the grader, is the limit).

    python benchmarks/bench_judge.py [--tests 2000] [--latency-ms 50] [--concurrency 1,8,32]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalh.model import (
    AssertionSpec,
    EvaluateOptions,
    ProviderChoice,
    ProviderSpec,
    Status,
    Suite,
    TestCase,
)
from evalh.runner.execute import run_suite

TARGET_RATIO = 1.2
VERDICT = json.dumps(
    {
        "choices": [
            {"message": {"role": "assistant", "content": '{"pass": true, "score": 1, "reason": "ok"}'}}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    }
).encode()


def serve(port_queue: Any, latency_s: float) -> None:
    """The grader: every POST answers VERDICT after ``latency_s`` (HTTP/1.1 keep-alive)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: avoid the delayed-ACK stall

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency_s)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(VERDICT)))
            self.end_headers()
            self.wfile.write(VERDICT)

        def log_message(self, format: str, *args: Any) -> None:
            return

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256

    server = Server(("127.0.0.1", 0), Handler)
    port_queue.put(server.server_address[1])
    server.serve_forever()


def build_suite(tests: int, base_url: str) -> Suite:
    grader = ProviderSpec(id="openai:chat:bench-judge", config={"apiBaseUrl": base_url, "apiKey": "sk-bench"})
    cases = tuple(
        TestCase(
            index=i,
            vars={"question": f"question {i}"},
            output=f"Answer number {i}: the order has shipped.",
            has_output=True,
            asserts=(
                AssertionSpec(type="llm-rubric", value="says the order has shipped", path=f"tests[{i}]"),
            ),
            path=f"tests[{i}]",
        )
        for i in range(tests)
    )
    return Suite(tests=cases, default_provider=ProviderChoice(default=grader))


def measure(suite: Suite, concurrency: int) -> tuple[float, float, int]:
    """(wall seconds, evalh's CPU seconds, tests passed) of one run."""
    options = EvaluateOptions(max_concurrency=concurrency, cache=False)
    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_suite(suite, options)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return elapsed, cpu, result.count(Status.PASS)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated levels")
    args = parser.parse_args()
    latency_s = args.latency_ms / 1000.0
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports, latency_s), daemon=True)
    server.start()
    try:
        base_url = f"http://127.0.0.1:{ports.get(timeout=10)}/v1"
        suite = build_suite(args.tests, base_url)
        print(f"{args.tests} llm-rubric tests, grader latency {args.latency_ms:g} ms")
        header = ("concurrency", "wall s", "ideal s", "ratio", "tests/s", "cpu ms/test", "passed")
        print("{:>11} {:>8} {:>8} {:>6} {:>8} {:>11} {:>7}".format(*header))
        worst = 0.0
        for level in (int(c) for c in args.concurrency.split(",")):
            elapsed, cpu, passed = measure(suite, level)
            ideal = args.tests * latency_s / level
            ratio = elapsed / ideal
            worst = max(worst, ratio)
            rate = args.tests / elapsed
            cpu_ms = cpu * 1000 / args.tests
            row = (
                level,
                f"{elapsed:.2f}",
                f"{ideal:.2f}",
                f"{ratio:.2f}",
                f"{rate:.1f}",
                f"{cpu_ms:.2f}",
                passed,
            )
            print("{:>11} {:>8} {:>8} {:>6} {:>8} {:>11} {:>7}".format(*row))
        verdict = "meets" if worst <= TARGET_RATIO else "misses"
        print(f"worst ratio {worst:.2f}: {verdict} the target of {TARGET_RATIO}x the ideal")
        return 0 if worst <= TARGET_RATIO else 1
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    sys.exit(main())
