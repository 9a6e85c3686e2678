"""CPU seconds (user+sys) of ``evalh validate``, of building a suite and of ``evalh --help``, for this
checkout and another revision, alternated run by run (the machines are shared: a figure means something
only beside the other revision's, measured just before or after it).

    python benchmarks/bench_validate.py CONFIG [--base main | --base-path /work/main] [--runs 5]

CONFIG is a suite such as A_5000.yaml from gen_configs.py (``--sets A --sizes 5000``). The base revision
is checked out in a temporary git worktree, or ``--base-path`` names a checkout that exists already (a
shared repository whose worktrees are not yours to add). Prints, per measure and revision, the median
and the best. In one process with the modules already imported: "load" is the whole load_suite, and
its phases: "yaml" reading the document, "env" rendering ``{{ env.X }}``, "secrets" registering the
config's secrets, "schema" the JSON-Schema check, "build" build_tests (the tests' specs, rendered) and
"checks" the assertions' checks and the warnings after them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# each phase wrapped where load.py calls it; load_suite timed whole (validate's arguments)
_PHASES = """
import sys, time
from pathlib import Path
import evalh.config.checks as checks
import evalh.config.load as load
checker = checks.AssertionChecker
phases = {"yaml": (load, "load_document"), "env": (load, "render_config_env"),
    "secrets": (load, "register_config"), "schema": (load, "_check_schema"), "build": (load, "build_tests"),
    "checks": (checker, "check_tests"), "traced": (checker, "warn_untraced"),
    "tools": (checker, "warn_toolless")}
spent = dict.fromkeys(phases, 0.0)
def timed(name, function):
    def phase(*args, **kwargs):
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - start
    return phase
for name, (owner, attribute) in phases.items():
    setattr(owner, attribute, timed(name, getattr(owner, attribute)))
start = time.process_time()
load.load_suite([Path(sys.argv[1])], report_config=False)
spent["load"] = time.process_time() - start
spent["checks"] += spent.pop("traced") + spent.pop("tools")
print(" ".join(f"{name}={figure}" for name, figure in spent.items()))
"""


def _child_cpu(command: list[str], cwd: Path) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=_env(cwd))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {cwd}:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout


def _env(checkout: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled once, as an installed evalh is
    return env


def _measures(checkout: Path, config: Path) -> dict[str, float]:
    python = sys.executable
    validate, _ = _child_cpu([python, "-m", "evalh", "validate", str(config)], checkout)
    helped, _ = _child_cpu([python, "-m", "evalh", "--help"], checkout)
    _, phases = _child_cpu([python, "-c", _PHASES, str(config)], checkout)
    figures = dict(pair.split("=") for pair in phases.split())
    return {"validate": validate, "--help": helped, **{name: float(cpu) for name, cpu in figures.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", type=Path)
    parser.add_argument("--base", default="main")
    parser.add_argument("--base-path", type=Path, help="an existing checkout to compare with")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    config = args.config.resolve()
    if args.base_path is not None:
        figures = _alternated({"head": ROOT, "base": args.base_path.resolve()}, config, args.runs)
    else:
        with tempfile.TemporaryDirectory() as scratch:
            base = Path(scratch) / "base"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True
            )
            try:
                figures = _alternated({"head": ROOT, args.base: base}, config, args.runs)
            finally:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True
                )
    for measure in figures["head"]:
        shown = "  ".join(
            f"{name}: median {statistics.median(runs[measure]):.3f} best {min(runs[measure]):.3f}"
            for name, runs in figures.items()
        )
        print(f"{measure:9} CPU s  {shown}")


def _alternated(checkouts: dict[str, Path], config: Path, runs: int) -> dict[str, dict[str, list[float]]]:
    for checkout in checkouts.values():  # compile the modules once, outside the figures
        _measures(checkout, config)
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
    for _ in range(runs):
        for name, checkout in checkouts.items():
            for measure, cpu in _measures(checkout, config).items():
                figures[name].setdefault(measure, []).append(cpu)
    return figures


if __name__ == "__main__":
    main()
