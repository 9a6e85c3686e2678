"""The floors under evalh's time on a generated suite: work any Python evaluator on these dependencies
must do, next to what evalh takes in all.

    python benchmarks/bench_floors.py [--suite det-5000] [--promptfoo-seconds S] [--repeats 3]

On the suite of ``bench_vs_promptfoo.py`` (written to a temporary folder), in CPU seconds, best of
``--repeats``:

- the interpreter's start (a fresh process), and the import of the dependencies any validation of
  the config needs (PyYAML, jsonschema, typer, jinja2: fixed by the design card);
- libyaml's parse events for the config alone (PyYAML's C parser, the floor of any YAML read with
  PyYAML: no value built);
- ``json.dumps`` of the report's rows (C encoder, compact): the rows' JSON text, without building them;
- evalh ``run`` (as ``bench_vs_promptfoo.py`` runs it) and ``validate``, whole processes, and the
  import of evalh's ``run`` path alone (evalh's own choice of modules, so not counted as a floor).

With ``--promptfoo-seconds`` (promptfoo's wall time on the same suite, from ``bench_vs_promptfoo.py``),
it prints the time budget of the 20x target and the part of it the floors take.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_vs_promptfoo import TARGET_RATIO, compile_evalh, evalh_command, evalh_env, write_suite
from yaml._yaml import CParser

DEPENDENCY_IMPORTS = "import yaml, jsonschema, typer, jinja2"
RUN_IMPORTS = (
    "import evalh.cli.app, evalh.session.run, evalh.runner.execute, evalh.reports.writers, evalh.store.runs"
)


def child_cpu(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_cpu(work: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.process_time()
        work()
        samples.append(time.process_time() - started)
    return min(samples)


def parse_events(text: str) -> None:
    parser = CParser(text)
    try:
        while parser.get_event() is not None:
            pass
    finally:
        parser.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suite", default="det-5000", help="a deterministic suite of bench_vs_promptfoo.py")
    parser.add_argument("--promptfoo-seconds", type=float, help="promptfoo's wall time on the same suite")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    compile_evalh()
    with tempfile.TemporaryDirectory(prefix="evalh-floors-") as folder:
        work = Path(folder)
        config = write_suite(work, args.suite, embed_url="http://127.0.0.1:9/v1")
        env = evalh_env(work / "home")
        report = config.parent / "evalh.json"
        run = [*evalh_command(), "eval", "-c", config.name, "-o", str(report), "--no-cache"]
        run += ["--no-table", "--no-progress-bar"]
        validate = [*evalh_command(), "validate", "-c", config.name]

        def process(command: list[str]) -> float:
            return min(child_cpu(command, config.parent, env) for _ in range(args.repeats))

        text = config.read_text(encoding="utf-8")
        figures = {
            "interpreter start": process([sys.executable, "-c", "pass"]),
            "importing yaml, jsonschema, typer, jinja2": process([sys.executable, "-c", DEPENDENCY_IMPORTS]),
            "libyaml parse events of the config": best_cpu(lambda: parse_events(text), args.repeats),
        }
        imports = process([sys.executable, "-c", RUN_IMPORTS])
        evalh_run, evalh_validate = process(run), process(validate)
        rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
        figures["json.dumps of the report's rows"] = best_cpu(
            lambda: [json.dumps(row, separators=(",", ":")) for row in rows], args.repeats
        )
    floors = sum(figures.values())  # the dependencies' imports are part of evalh's, not added again
    print(f"{args.suite}: CPU seconds, best of {args.repeats}")
    for name, seconds in figures.items():
        print(f"  {name:<42} {seconds:6.2f}")
    print(f"  {'floors together':<42} {floors:6.2f}")
    print(f"  {'evalh run (whole process)':<42} {evalh_run:6.2f}   floors {floors / evalh_run:.0%} of it")
    print(f"  {'  of which importing its run path':<42} {imports:6.2f}")
    validate_floor = sum(list(figures.values())[:3])  # a validation encodes no rows
    print(f"  {'evalh validate (whole process)':<42} {evalh_validate:6.2f}   floors {validate_floor:.2f}")
    if args.promptfoo_seconds:
        budget = args.promptfoo_seconds / TARGET_RATIO
        print(
            f"  budget of the {TARGET_RATIO:.0f}x target: {budget:.2f} s; "
            f"the floors take {floors / budget:.0%} of it, "
            f"leaving {budget - floors:.2f} s for everything else evalh took {evalh_run - floors:.2f} s to do"
        )


if __name__ == "__main__":
    main()
