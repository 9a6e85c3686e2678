"""Throughput of deterministic assertions end to end, peak memory, and CLI start-up time.

Builds a suite of N tests (default 10,000) with recorded outputs and 5 deterministic assertions each,
runs it in a fresh ``evalh run`` process (config load + schema check + grading + JSON and JUnit
reports), and prints assertion checks per second, peak RSS, and ``evalh --help`` wall time.

    python benchmarks/bench_run.py [--tests 10000]

Targets on a 2-core machine: >= 5,000 checks/s; ``evalh --help`` < 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKS_PER_TEST = 5
TARGET_CHECKS_PER_S = 5000.0
TARGET_HELP_S = 0.3


def write_suite(directory: Path, tests: int) -> Path:
    rows = []
    for i in range(tests):
        output = f'{{"id": {i}, "answer": "The order {i} has shipped", "items": {i % 7}}}'
        rows.append(
            {
                "description": f"order {i}",
                "vars": {"order": i},
                "output": output,
                "assert": [
                    {"type": "contains", "value": f"order {i}"},
                    {"type": "icontains-any", "value": ["SHIPPED", "delivered"]},
                    {"type": "regex", "value": r'"items":\s*\d'},
                    {"type": "is-json"},
                    {"type": "not-contains", "value": "error"},
                ],
            }
        )
    (directory / "tests.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    config = directory / "bench.yaml"
    config.write_text("description: bench\ntests: file://tests.jsonl\n", encoding="utf-8")
    return config


def evalh_command() -> list[str]:
    found = shutil.which("evalh")
    return [found] if found else [sys.executable, "-m", "evalh"]


def time_help(repeats: int = 7) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([*evalh_command(), "--help"], check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = write_suite(directory, args.tests)
        command = [
            *evalh_command(),
            "run",
            str(config),
            "--no-table",
            "--no-progress-bar",
            "--no-cache",
            "-o",
            str(directory / "out.json"),
            "-o",
            str(directory / "out.junit.xml"),
        ]
        started = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if completed.returncode != 0:
            sys.exit(f"evalh run failed with exit {completed.returncode}:\n{completed.stderr[-2000:]}")
        report = json.loads((directory / "out.json").read_text(encoding="utf-8"))
        stats = report["results"]["stats"]
    checks = args.tests * CHECKS_PER_TEST
    rate = checks / wall
    help_s = time_help()
    print(f"tests: {args.tests:,}  assertion checks: {checks:,}  (passed rows: {stats['successes']:,})")
    print(f"wall time (process start to exit, incl. load, schema check, json+junit reports): {wall:.2f} s")
    print(
        f"checks per second: {rate:,.0f}  "
        f"(target {TARGET_CHECKS_PER_S:,.0f}: {rate / TARGET_CHECKS_PER_S:.2f}x)"
    )
    print(f"peak memory (RSS): {peak_mib:,.0f} MiB")
    print(
        f"evalh --help: {help_s * 1000:.0f} ms median of 7  (target {TARGET_HELP_S * 1000:.0f} ms: "
        f"{TARGET_HELP_S / help_s:.2f}x headroom)"
    )


if __name__ == "__main__":
    main()
