"""Graded tests per second against a loopback grader that takes 500 ms per call, at concurrency 64.

Real graders take 0.5-5 s a call, so what users wait for is whether evalh keeps ``--concurrency`` calls
in flight the whole run. A grader server in its own process (asyncio, HTTP/1.1 keep-alive, so its CPU
stays small beside evalh's) answers every ``/v1/chat/completions`` call after ``--latency-ms`` with a
JSON verdict, and counts the calls in flight. A suite of ``--tests`` recorded outputs, each with one
``llm-rubric``, runs through ``evalh.runner`` (real provider, HTTP layer, grading and scoring;
completion cache off). The ideal is ``tests x latency / concurrency`` (waves of ``concurrency`` calls);
the target is evalh's wall time within 1.1x of it.

It prints, per run: wall time, ideal, their ratio, graded tests per second, evalh's CPU milliseconds per
test, and the server's peak and mean calls in flight (the mean is busy call-seconds / wall seconds: 64
means every slot was busy all the time). For reference the same calls are sent by httpx alone (the same
eight pools of eight connections as evalh's HTTP client, no evalh), so a shared machine's limit shows
apart from evalh's: when the CPU a call costs x concurrency / latency approaches the CPU share the
process gets, the client, not the grader, sets the pace. Runs alternate ``--repeats`` times.

    python benchmarks/bench_judge.py [--tests 1280] [--latency-ms 500] [--concurrency 64] [--repeats 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx

from evalh.model import (
    AssertionSpec,
    ProviderChoice,
    ProviderSpec,
    RunOptions,
    Status,
    Suite,
    TestCase,
)
from evalh.runner.execute import run_suite

TARGET_RATIO = 1.1
VERDICT = json.dumps(
    {
        "choices": [
            {"message": {"role": "assistant", "content": '{"pass": true, "score": 1, "reason": "ok"}'}}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    }
).encode()


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


class _Grader:
    """The server's state: calls in flight, their peak, and busy call-seconds since the last reset."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.active = self.peak = self.served = 0
        self.busy_s = 0.0

    def stats(self, reset: bool) -> bytes:
        payload = json.dumps({"peak": self.peak, "served": self.served, "busy_s": self.busy_s}).encode()
        if reset:
            self.peak, self.served, self.busy_s = self.active, 0, 0.0
        return payload

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, _, rest = head.decode("latin-1").partition("\r\n")
                length = 0
                for line in rest.split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                target = request_line.split(" ")[1] if " " in request_line else ""
                if target.partition("?")[0].endswith("/stats"):
                    body = self.stats(reset=target.endswith("?reset"))
                else:
                    body = await self.grade()
                writer.write(_HEAD % len(body) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def grade(self) -> bytes:
        self.active += 1
        self.peak = max(self.peak, self.active)
        started = time.perf_counter()
        await asyncio.sleep(self.latency_s)
        self.active -= 1
        self.served += 1
        self.busy_s += time.perf_counter() - started
        return VERDICT


def serve(port_queue: Any, latency_s: float) -> None:
    """The grader process: every POST answers VERDICT after ``latency_s``; ``GET /stats[?reset]``."""

    async def main() -> None:
        grader = _Grader(latency_s)
        server = await asyncio.start_server(grader.connection, "127.0.0.1", 0, backlog=1024)
        port_queue.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def server_stats(base_url: str) -> dict[str, Any]:
    """The grader's counters since the last call, then reset."""
    with urllib.request.urlopen(f"{base_url}/stats?reset", timeout=30) as reply:
        return json.loads(reply.read())  # type: ignore[no-any-return]


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


def run_evalh(suite: Suite, concurrency: int) -> int:
    """One run of the suite; the tests that passed."""
    result = run_suite(suite, RunOptions(max_concurrency=concurrency, cache=False))
    return result.count(Status.PASS)


def run_httpx(base_url: str, tests: int, concurrency: int) -> int:
    """The same calls through httpx alone, ``concurrency`` at a time over pools of 8 connections, each
    call on the least busy pool (as evalh's HTTP client does: one pool of 64 costs 13 ms of CPU a call
    here, and a call sent to a full pool waits there); the replies that parsed."""
    body = {
        "model": "bench-judge",
        "messages": [{"role": "user", "content": "Grade the output against the rubric. " * 12}],
    }

    async def main() -> int:
        pools = max(1, concurrency // 8)
        limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
        clients = [httpx.AsyncClient(limits=limits) for _ in range(pools)]
        gate = asyncio.Semaphore(concurrency)

        busy = [0] * pools

        async def one(index: int) -> bool:
            async with gate:
                pool = min(range(pools), key=busy.__getitem__)  # the least busy, as evalh picks
                busy[pool] += 1
                try:
                    reply = await clients[pool].post(f"{base_url}/chat/completions", json=body)
                finally:
                    busy[pool] -= 1
                return bool(json.loads(reply.content)["choices"])

        try:
            return sum(await asyncio.gather(*(one(i) for i in range(tests))))
        finally:
            for client in clients:
                await client.aclose()

    return asyncio.run(main())


def measure(work: Callable[[], int], base_url: str) -> tuple[float, float, int, dict[str, Any]]:
    """(wall seconds, this process's CPU seconds, work's count, the grader's counters) of one run."""
    server_stats(base_url)
    started, cpu_started = time.perf_counter(), time.process_time()
    count = work()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return elapsed, cpu, count, server_stats(base_url)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=1280)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    latency_s, level = args.latency_ms / 1000.0, args.concurrency
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports, latency_s), daemon=True)
    server.start()
    try:
        base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        suite = build_suite(args.tests, base_url)
        run_evalh(build_suite(level, base_url), level)  # imports and first connections out of the way
        ideal = args.tests * latency_s / level
        print(
            f"{args.tests} llm-rubric tests, grader latency {args.latency_ms:g} ms, concurrency {level}: "
            f"ideal {ideal:.2f} s ({args.tests / ideal:.1f} tests/s); {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f} at the start"
        )
        header = ("client", "wall s", "ratio", "tests/s", "cpu ms/test", "peak", "mean", "done")
        print("{:>12} {:>8} {:>6} {:>8} {:>11} {:>5} {:>6} {:>6}".format(*header))
        contenders = {
            "evalh": lambda: run_evalh(suite, level),
            "httpx alone": lambda: run_httpx(base_url, args.tests, level),
        }
        ratios: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.repeats):  # alternate: a shared machine's load swings
            for name, work in contenders.items():
                elapsed, cpu, done, stats = measure(work, base_url)
                ratios[name].append(elapsed / ideal)
                mean = stats["busy_s"] / elapsed
                row: tuple[str, ...] = (
                    name,
                    f"{elapsed:.2f}",
                    f"{elapsed / ideal:.2f}",
                    f"{args.tests / elapsed:.1f}",
                )
                row += (f"{cpu * 1000 / args.tests:.2f}", str(stats["peak"]), f"{mean:.1f}", str(done))
                print("{:>12} {:>8} {:>6} {:>8} {:>11} {:>5} {:>6} {:>6}".format(*row))
        best = min(ratios["evalh"])
        verdict = "meets" if best <= TARGET_RATIO else "misses"
        print(
            f"evalh: best ratio {best:.2f}, median {statistics.median(ratios['evalh']):.2f} "
            f"(httpx alone: best {min(ratios['httpx alone']):.2f}); {verdict} the target of "
            f"{TARGET_RATIO}x the ideal; load average {os.getloadavg()[0]:.1f} at the end"
        )
        return 0 if best <= TARGET_RATIO else 1
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    sys.exit(main())
