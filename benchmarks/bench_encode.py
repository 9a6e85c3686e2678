"""CPU seconds of what a run does with its finished rows: each encoded once (``RowSpool.add``: the codec
and the compact text), recorded in the run store (batched inserts, the config echo stored at the end) and
the JSON report written around the spooled texts; and the config echo made alone.

    python benchmarks/bench_encode.py --config A_5000.yaml [--repeats 5]
    python benchmarks/bench_encode.py --config A_5000.yaml --base /work/main   # paired: base, this, base, ...

The suite is loaded and run once (``run_jobs``: no report, nothing recorded); each repeat then handles
its rows as ``evalh run`` does (``session/run.py`` ``on_result``, ``Recording.finish``, the JSON report)
in a fresh temporary ``EVALH_HOME`` and prints each phase's CPU seconds (``time.process_time``), then the
median and best of each. With ``--base DIR`` (another checkout), each repeat runs once with ``DIR``'s code
(``PYTHONPATH=DIR``) and once with this checkout's, alternated, since the machine is shared: only paired
figures compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("encode", "store", "report", "echo", "total")


def measure(config: Path, repeats: int) -> None:
    """Print one line of phase figures per repeat (``phase=seconds``), at the evalh on ``sys.path``."""
    from evalh.common import gc_policy
    from evalh.config.load import load_suite
    from evalh.model import RunOptions
    from evalh.reports.streamed import ConfigEcho, RowSpool
    from evalh.reports.writers import write_each_report
    from evalh.session.context import run_context
    from evalh.session.run import plan_for_run, run_jobs
    from evalh.store.recording import recording

    clock = time.process_time
    with run_context():
        suite = load_suite(config)
        options = RunOptions()
        result = run_jobs(suite, plan_for_run(suite, options), options)
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as home:
                os.environ["EVALH_HOME"] = home
                encode = store = 0.0
                with RowSpool() as spool, _echo(ConfigEcho, suite.raw_config) as echo, gc_policy.running():
                    with recording(suite, result.started_at, enabled=True, echo=echo) as record:
                        for row in result.results:
                            started = clock()
                            encoded = spool.add(row)
                            added = clock()
                            record.add(encoded)
                            encode, store = encode + added - started, store + clock() - added
                        started = clock()
                        record.finish(result)
                        store += clock() - started
                    started = clock()
                    write_each_report(result, [Path(home) / "report.json"], spool=spool, echo=echo)
                    report = clock() - started
                started = clock()
                list(_echo(ConfigEcho, suite.raw_config).chunks())
                echo_alone = clock() - started
            figures = dict(
                zip(PHASES, (encode, store, report, echo_alone, encode + store + report), strict=True)
            )
            print(" ".join(f"{phase}={figures[phase]:.3f}" for phase in PHASES), flush=True)


def _echo(echo: Any, config: Any) -> Any:
    """The config echo as ``session/run.py`` makes it: taken as the load redacted it (a revision
    before that walked it again)."""
    try:
        return echo(config, redacted=True)
    except TypeError:
        return echo(config)


def _parse(line: str) -> dict[str, float]:
    return {name: float(value) for name, value in (item.split("=") for item in line.split())}


def _summary(label: str, runs: list[dict[str, float]]) -> str:
    return f"{label}: " + "  ".join(
        f"{phase} {statistics.median(r[phase] for r in runs):.3f}/{min(r[phase] for r in runs):.3f}"
        for phase in PHASES
    )


def paired(config: Path, repeats: int, base: Path) -> None:
    """Run ``measure`` once per repeat with ``base`` and with this checkout, alternated, in subprocesses."""
    runs: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    for _ in range(repeats):
        for label, checkout in (("base", base), ("head", ROOT)):
            env = {**os.environ, "PYTHONPATH": str(checkout)}
            command = [sys.executable, __file__, "--config", str(config), "--repeats", "1"]
            done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
            figures = _parse(done.stdout.strip().splitlines()[-1])
            runs[label].append(figures)
            print(label, " ".join(f"{k}={v:.3f}" for k, v in figures.items()), flush=True)
    print("median/best")
    for label, figures_list in runs.items():
        print(_summary(label, figures_list))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="a suite whose provider is echo")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another checkout of evalh to pair with (its PYTHONPATH)")
    args = parser.parse_args()
    if args.base:
        paired(args.config.resolve(), args.repeats, args.base.resolve())
        return
    measure(args.config, args.repeats)
    if args.repeats > 1:
        print("(per repeat above; run with --base REV for paired figures)")


if __name__ == "__main__":
    main()
