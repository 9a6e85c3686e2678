"""Peak memory and CPU of a large run and of reading it back: the run with six report formats,
``evalh runs show --json``, ``evalh diff`` of two such runs, and the viewer (``evalh view``, started for
real) answering the run list, a run's first page and a comparison.

Every figure is one subprocess: its CPU seconds (user + system) and peak RSS (``wait4``'s ru_maxrss; for
the viewer, the server process over all its requests). The suite has N tests with recorded outputs and
three assertions each (one test in seven fails), so the runs need no network. Its two runs go into a
store of their own (``EVALH_HOME`` in a temporary directory, or ``--home DIR`` to keep and reuse it).

    python benchmarks/bench_big_runs.py [--tests 50000] [--home DIR]     (from the repository's root)

Targets at 50,000 rows: peak <= 500 MiB for show, diff and the viewer; the viewer's first page of a run
in under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_viewer import write_suite  # its suite: N tests of recorded outputs, 3 assertions each

FORMATS = ("json", "xml", "csv", "html", "yaml", "jsonl")
TARGET_MIB, TARGET_FIRST_PAGE_S = 500, 2.0


def measured(name: str, command: list[str], env: dict[str, str]) -> None:
    """Run ``command``, its stdout thrown away, and print its CPU seconds and peak RSS."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    errors = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode not in (0, 1):
        sys.exit(f"{name}: exit {process.returncode}\n{errors[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"{name:<34} CPU {cpu:7.1f} s  wall {wall:7.1f} s  peak {usage.ru_maxrss / 1024:7.0f} MiB")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fetched(url: str) -> tuple[float, int]:
    """Seconds to read ``url`` whole, and its size in bytes."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        size = len(answer.read())
    return time.perf_counter() - started, size


def measure_viewer(evalh: list[str], env: dict[str, str]) -> None:
    port = free_port()
    command = [*evalh, "view", "--no-open", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                fetched(base + "/api/runs")
                break
            except OSError:
                time.sleep(0.1)
        for name, path in (
            ("viewer: /api/runs", "/api/runs"),
            ("viewer: first page of latest", "/api/runs/latest"),
            ("viewer: compare latest~1 latest", "/api/compare?baseline=latest~1&current=latest"),
        ):
            seconds, size = fetched(base + path)
            print(f"{name:<34} {seconds:7.2f} s  {size / 2**20:7.1f} MiB of JSON")
    finally:
        process.send_signal(signal.SIGINT)
        _, _, usage = os.wait4(process.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    print(f"{'viewer server (all requests)':<34} CPU {cpu:7.1f} s  peak {usage.ru_maxrss / 1024:7.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=50_000)
    parser.add_argument(
        "--home", type=Path, help="EVALH_HOME to use (kept); two runs are made when it has none"
    )
    args = parser.parse_args()
    evalh = [sys.executable, "-m", "evalh"]
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home or Path(tmp) / "home"
        env = {**os.environ, "EVALH_HOME": str(home)}
        listed = subprocess.run([*evalh, "runs", "list", "--json"], env=env, capture_output=True, text=True)
        if listed.returncode != 0 or len(json.loads(listed.stdout or "[]")) < 2:
            config = write_suite(Path(tmp), args.tests)
            run = [*evalh, "run", "-c", str(config), "--no-cache", "--no-table", "--no-progress-bar"]
            reports = [str(Path(tmp) / f"run.{suffix}") for suffix in FORMATS]
            measured(f"run, {len(FORMATS)} report formats", [*run, "-o", *reports], env)
            measured("run, no report", run, env)
        measured("runs show --json latest", [*evalh, "runs", "show", "--json", "latest"], env)
        measured("diff latest~1 latest", [*evalh, "diff", "latest~1", "latest"], env)
        measure_viewer(evalh, env)
    print(f"targets: peak <= {TARGET_MIB} MiB (show, diff, viewer); first page < {TARGET_FIRST_PAGE_S:.0f} s")


if __name__ == "__main__":
    main()
