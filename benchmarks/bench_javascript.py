"""Embedded JavaScript engines from PyPI, measured for evalh's ``javascript`` assertion.

For each engine importable here (``quickjs`` is the import name of both ``quickjs`` and ``quickjs-ng``,
so measure them from separate virtual environments), prints: which ES2015-ES2022 features work, whether
a time limit stops ``while (true) {}``, whether a memory limit stops a runaway allocation, whether the
GIL stays free while JavaScript runs (so the event loop keeps serving Ctrl-C), and calls per second of
a small function through evalh's wrapper (when evalh is importable) and through the raw engine.

    python benchmarks/bench_javascript.py [--calls 20000] [--typescript-files 50]

Figures from one run (2 shared cores under load, CPython 3.11, x86_64 Linux, November 2026):

    engine             wheel: download / installed   ES features  loop stopped  memory cap  GIL free  calls/s
    quickjs-ng 0.17.0  2.5 MB / 8.1 MB (abi3)        16 / 16      yes (CPU)     yes         yes       65,000
    quickjs 1.19.4     2.2 MB / 6.7 MB (archived)    15 / 16      yes (CPU)     yes         yes       60,000
    mini-racer 0.14.1  22 MB / 85 MB (V8)            16 / 16      yes (wall)    yes         yes        1,250

Through evalh.runtimes.javascript (JSON both ways, limits, a thread hop): 7,100 calls/s one at a time.
quickjs-ng has no macOS x86_64 wheel (it builds from source there); mini-racer none for Linux aarch64.

TypeScript / ES module files (``--typescript-files N``; TypeScript 5.7.3's compiler from dukpy 0.6.0, run
in quickjs-ng; CPU seconds of file_source in a fresh process, same machine):

    first .ts file, cold disk cache (loads the compiler)   0.89 s
    the same file in a new process, from the disk cache     0.0085 s (compiler not loaded)
    50 distinct .ts files, cold (one compiler load)          2.06 s: 0.89 s + ~24 ms a file

Transpilers measured for this (issue 27): esbuild-py 0.1.6 and oxc-py 0.1.3 only transform JSX (types
come back empty) and esbuild-py imports distutils (gone in Python 3.12); deno 2.x is a 42 MB wheel and a
subprocess per file; TypeScript's compiler in dukpy's own duktape takes ~2 s a file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FEATURES: dict[str, str] = {
    "arrow functions": "[1, 2].map((x) => x * 2)[1] === 4",
    "template literals": "`a${1 + 1}b` === 'a2b'",
    "destructuring + spread": "(() => { const {a, ...r} = {a: 1, b: 2}; return a + r.b === 3; })()",
    "optional chaining (ES2020)": "({a: null}).a?.b === undefined",
    "nullish coalescing (ES2020)": "(null ?? 5) === 5",
    "BigInt (ES2020)": "(2n ** 64n).toString() === '18446744073709551616'",
    "JSON round trip": "JSON.stringify(JSON.parse('{\"a\":[1,2]}')) === '{\"a\":[1,2]}'",
    "regex flags s,u,y": "/a.b/s.test('a\\nb') && /\\u{1F600}/u.test('\\u{1F600}') && /a/y.sticky",
    "regex named groups + lookbehind": "/(?<=\\$)(?<n>\\d+)/.exec('$42').groups.n === '42'",
    "String.matchAll (ES2020)": "[...'a1b2'.matchAll(/\\d/g)].length === 2",
    "Object.fromEntries (ES2019)": "Object.fromEntries([['a', 1]]).a === 1",
    "Array.flat (ES2019)": "[[1], [2, [3]]].flat(2).length === 3",
    "replaceAll (ES2021)": "'a-b-c'.replaceAll('-', '') === 'abc'",
    "Array.at (ES2022)": "[1, 2, 3].at(-1) === 3",
    "class fields (ES2022)": "(() => { class A { x = 1; #y = 2; get y() { return this.#y; } } "
    "return new A().y === 2; })()",
    "async/await + Promise": "(() => { async function f() { return 1; } return f() instanceof Promise; })()",
}


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


class Engine:
    """The few operations measured, per engine."""

    name = ""

    def evaluate(self, code: str, *, timeout_s: float = 5.0, memory: int = 64 << 20) -> Any:
        raise NotImplementedError

    def function(self, code: str) -> Callable[..., Any]:
        raise NotImplementedError


class QuickJS(Engine):
    def __init__(self) -> None:
        self.quickjs = importlib.import_module("quickjs")
        ng = _version("quickjs-ng")
        self.name = f"quickjs-ng {ng}" if ng != "?" else f"quickjs {_version('quickjs')}"

    def evaluate(self, code: str, *, timeout_s: float = 5.0, memory: int = 64 << 20) -> Any:
        context = self.quickjs.Context()
        context.set_time_limit(timeout_s)
        context.set_memory_limit(memory)
        return context.eval(code)

    def function(self, code: str) -> Callable[..., Any]:
        context = self.quickjs.Context()
        context.eval(f"var f = {code}; var g = (a) => JSON.stringify(f(...JSON.parse(a)));")
        return context.get("g")  # type: ignore[no-any-return]


class MiniRacer(Engine):
    def __init__(self) -> None:
        self.module = importlib.import_module("py_mini_racer")
        self.name = f"mini-racer {_version('mini-racer')}"

    def evaluate(self, code: str, *, timeout_s: float = 5.0, memory: int = 64 << 20) -> Any:
        racer = self.module.MiniRacer()
        try:
            return racer.eval(code, timeout_sec=timeout_s, max_memory=memory)
        finally:
            racer.close()

    def function(self, code: str) -> Callable[..., Any]:
        racer = self.module.MiniRacer()
        racer.eval(f"var f = {code}; var g = (a) => JSON.stringify(f(...JSON.parse(a)));")
        return lambda args: racer.call("g", args)


def _engines() -> list[Engine]:
    found: list[Engine] = []
    for factory in (QuickJS, MiniRacer):
        try:
            found.append(factory())
        except ImportError:
            continue
    return found


def features(engine: Engine) -> None:
    working = 0
    for label, expression in FEATURES.items():
        try:
            ok = engine.evaluate(expression) is True
        except Exception as error:  # any engine error means: not supported
            ok = False
            label += f" ({type(error).__name__}: {str(error)[:60]})"
        working += ok
        if not ok:
            print(f"  missing: {label}")
    print(f"  ES features: {working} / {len(FEATURES)}")


def _stopped(engine: Engine, code: str, **limits: Any) -> str:
    started = time.perf_counter()
    try:
        engine.evaluate(code, **limits)
    except Exception as error:
        elapsed = time.perf_counter() - started
        return f"stopped after {elapsed:.2f} s ({type(error).__name__}: {str(error)[:60]})"
    return "NOT stopped"


def limits(engine: Engine) -> None:
    print("  while(true){} with a 0.5 s limit:", _stopped(engine, "while (true) {}", timeout_s=0.5))
    grow = "const a = []; while (true) { a.push('x'.repeat(1000)); }"
    print("  unbounded allocation, 32 MB limit:", _stopped(engine, grow, timeout_s=30, memory=32 << 20))


def gil(engine: Engine) -> None:
    """Whether Python threads run while JavaScript loops (they must, for Ctrl-C to be served)."""
    ticks = 0
    done = threading.Event()

    def loop() -> None:
        with contextlib.suppress(Exception):
            engine.evaluate("while (true) {}", timeout_s=1.0)
        done.set()

    thread = threading.Thread(target=loop)
    thread.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.01)
    thread.join()
    print(f"  Python ticks while JS looped 1 s: {ticks} (about 100 = GIL free, ~1 = GIL held)")


def speed(engine: Engine, calls: int) -> None:
    function = engine.function("(output, context) => output.length > 3 && context.vars.x === 1")
    context = {"vars": {"x": 1}, "prompt": "p"}
    started = time.perf_counter()
    for i in range(calls):
        json.loads(function(json.dumps([f"output {i}", context])))
    elapsed = time.perf_counter() - started
    print(f"  raw engine: {calls / elapsed:,.0f} calls/s (arguments and result as JSON text)")


def evalh_speed(calls: int) -> None:
    """Calls through evalh's runtime (JSON in and out, limits set, a thread hop per call)."""
    try:
        from evalh.runtimes.javascript import call_javascript
        from evalh.runtimes.javascript_source import inline_source
    except ImportError:
        return
    source = inline_source("output.length > 3 && context.vars.x === 1")

    async def one_at_a_time() -> float:
        started = time.perf_counter()
        for i in range(calls):
            await call_javascript(source, (f"output {i}", {"vars": {"x": 1}}), timeout_s=5.0)
        return time.perf_counter() - started

    elapsed = asyncio.run(one_at_a_time())
    print(f"evalh.runtimes.javascript: {calls / elapsed:,.0f} calls/s one at a time")


_TS_FILE = """
interface Verdict {{ pass: boolean; score: number }}
enum Level {{ Low = 1, High = 2 }}
export default function grade{n}<T extends string>(output: T): Verdict {{
  return {{ pass: output.length > {n}, score: Level.High / 2 }};
}}
"""

_TS_PROCESS = """
import sys, time
from pathlib import Path
from evalh.runtimes import typescript
from evalh.runtimes.javascript_source import file_source
folder, count = Path(sys.argv[1]), int(sys.argv[2])
started = time.process_time()
for n in range(count):
    file_source(f"file://grade{n}.ts", folder)
print(time.process_time() - started, typescript.compiler_loads())
"""


def _ts_process(folder: Path, cache: Path, count: int) -> tuple[float, int]:
    environment = {**os.environ, "EVALH_CACHE_DIR": str(cache)}
    finished = subprocess.run(
        [sys.executable, "-c", _TS_PROCESS, str(folder), str(count)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, loads = finished.stdout.split()
    return float(seconds), int(loads)


def typescript_costs(files: int) -> None:
    """CPU seconds to turn TypeScript into CommonJS: the compiler's first load, a re-run served by the
    disk cache, and many files in one process."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for n in range(files):
            (folder / f"grade{n}.ts").write_text(_TS_FILE.format(n=n), encoding="utf-8")
        first, loads = _ts_process(folder, folder / "cache-1", 1)
        print(f"TypeScript: first file, cold cache: {first:.3f} s CPU ({loads} compiler load)")
        again, loads = _ts_process(folder, folder / "cache-1", 1)
        print(f"TypeScript: same file, new process, disk cache: {again:.4f} s CPU ({loads} compiler loads)")
        many, loads = _ts_process(folder, folder / "cache-2", files)
        each = (many - first) / max(1, files - 1) * 1000
        print(f"TypeScript: {files} files, cold: {many:.3f} s CPU ({loads} load, ~{each:.0f} ms a file)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--typescript-files", type=int, default=50)
    arguments = parser.parse_args()
    calls = arguments.calls
    typescript_costs(arguments.typescript_files)
    for engine in _engines():
        print(engine.name)
        features(engine)
        limits(engine)
        gil(engine)
        speed(engine, calls)
    evalh_speed(calls)


if __name__ == "__main__":
    main()
