"""Cost of user Python in worker processes: a worker's start, and one ``python`` assertion call.

Runs N (default 2,000) inline ``python`` assertions through the real handler, one at a time and then
all at once (as a run with concurrency does), and prints milliseconds per call.

    python benchmarks/bench_python.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from evalh.assertions.scripted import python_assertion
from evalh.runtimes.python import InlineCode, call_python, shutdown_workers
from tests.assertions.helpers import make_context


async def measure(calls: int) -> None:
    started = time.perf_counter()
    await call_python(InlineCode("True"), ("x", {}), timeout_s=30)
    print(f"first call (starts a worker): {(time.perf_counter() - started) * 1000:.0f} ms")
    contexts = [make_context("python", value="len(output) > 3", output=f"output {i}") for i in range(calls)]
    started = time.perf_counter()
    for ctx in contexts:
        await python_assertion(ctx)
    print(f"one at a time: {(time.perf_counter() - started) / calls * 1000:.3f} ms per assertion")
    started = time.perf_counter()
    await asyncio.gather(*(python_assertion(ctx) for ctx in contexts))
    print(f"all at once:   {(time.perf_counter() - started) / calls * 1000:.3f} ms per assertion")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    asyncio.run(measure(parser.parse_args().calls))
    shutdown_workers()


if __name__ == "__main__":
    main()
