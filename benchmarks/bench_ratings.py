"""What ratings cost on a large stored run: rating and clearing a row (found by its id among the run's
rows), listing runs with ratings applied, and reading the run back whole with and without ratings.

The suite is bench_viewer's (N tests of recorded outputs, three assertions each); the run goes into a
store of its own (``EVALH_HOME`` in a temporary directory).

    python benchmarks/bench_ratings.py [--tests 50000] [--rated 100]     (from the repository's root)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_viewer import write_suite  # its suite: N tests of recorded outputs, 3 assertions each


def timed(name: str, work: Callable[[], Any], repeat: int = 3) -> Any:
    """The fastest of ``repeat`` calls of ``work``, printed; returns its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    print(f"{name:<44} {best * 1000:9.1f} ms")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", type=int, default=50_000)
    parser.add_argument("--rated", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["EVALH_HOME"] = home
        config = write_suite(Path(home), args.tests)
        run = [sys.executable, "-m", "evalh", "run", str(config), "--no-table", "--no-cache"]
        subprocess.run(run, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from evalh.store import open_store

        with open_store() as store:
            run_id = store.resolve("latest").id
            ids = [row["id"] for row in store.iter_rows(run_id)]
            print(f"{len(ids):,} rows stored")
            timed("read the run whole, no rating", lambda: store.load_run(run_id))
            timed("rate the last row (found by its id)", lambda: store.rate(run_id, ids[-1], passed=True))
            timed("clear its rating", lambda: store.clear_rating(run_id, ids[-1]))
            for row_id in ids[: args.rated]:
                store.rate(run_id, row_id, passed=False, comment="looked at it")
            timed(f"list runs, {args.rated} ratings", store.list_runs)
            timed(f"read the run whole, {args.rated} ratings", lambda: store.load_run(run_id))


if __name__ == "__main__":
    main()
