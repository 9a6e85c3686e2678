"""Embedded JavaScript engines from PyPI, measured for evalh's ``javascript`` assertion.

For each engine importable here (``quickjs`` is the import name of both ``quickjs`` and ``quickjs-ng``,
so measure them from separate virtual environments), prints: which ES2015-ES2022 features work, whether
a time limit stops ``while (true) {}``, whether a memory limit stops a runaway allocation, whether the
GIL stays free while JavaScript runs (so the event loop keeps serving Ctrl-C), and calls per second of
a small function through evalh's wrapper (when evalh is importable) and through the raw engine.

    python benchmarks/bench_javascript.py [--calls 20000]

Figures from one run (2 shared cores under load, CPython 3.11, x86_64 Linux, November 2026):

    engine             wheel: download / installed   ES features  loop stopped  memory cap  GIL free  calls/s
    quickjs-ng 0.17.0  2.5 MB / 8.1 MB (abi3)        16 / 16      yes (CPU)     yes         yes       65,000
    quickjs 1.19.4     2.2 MB / 6.7 MB (archived)    15 / 16      yes (CPU)     yes         yes       60,000
    mini-racer 0.14.1  22 MB / 85 MB (V8)            16 / 16      yes (wall)    yes         yes        1,250

Through evalh.runtimes.javascript (JSON both ways, limits, a thread hop): 7,100 calls/s one at a time.
quickjs-ng has no macOS x86_64 wheel (it builds from source there); mini-racer none for Linux aarch64.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.metadata
import json
import threading
import time
from collections.abc import Callable
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


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    calls = parser.parse_args().calls
    for engine in _engines():
        print(engine.name)
        features(engine)
        limits(engine)
        gil(engine)
        speed(engine, calls)
    evalh_speed(calls)


if __name__ == "__main__":
    main()
