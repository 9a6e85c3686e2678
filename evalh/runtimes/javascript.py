"""User JavaScript (``javascript`` assertions, transforms) runs in an embedded engine, with limits.

The engine is QuickJS (the ``quickjs-ng`` package: 2.5 MB, ES2023, no Node). It has no file, network,
process or timer access: only the language and its built-ins (JSON, Math, RegExp, Date...), plus a
``console`` whose output is discarded. Arguments and results cross as JSON text.

Each call runs on one of at most :data:`MAX_THREADS` daemon threads (the engine releases the GIL, so
the event loop keeps serving Ctrl-C and other rows meanwhile). A thread keeps the programs it compiled
(a QuickJS context belongs to the thread that made it), so each source compiles once per thread.

Limits: a call may take ``timeout_s`` of wall time, and the engine stops the script after ``timeout_s``
of the process's CPU time (QuickJS cannot be interrupted from outside, so this bounds a call that evalh
stopped waiting for); memory per program is capped at :data:`MEMORY_LIMIT_BYTES`. A call that times
out, or whose caller is cancelled, is abandoned: its thread is replaced at once and exits when the
engine's own limit stops the script.
"""

from __future__ import annotations

import asyncio
import collections
import json
import queue
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalh.runtimes.javascript_source import JsSource
from evalh.runtimes.processes import TimedOut
from evalh.runtimes.quickjs_engine import MEMORY_LIMIT_BYTES, engine

__all__ = [
    "MAX_THREADS",
    "MEMORY_LIMIT_BYTES",
    "JsFailed",
    "JsReturned",
    "JsThrown",
    "TimedOut",
    "call_javascript",
    "evaluate_once",
    "syntax_problem",
]

MAX_THREADS = 4
_CONTEXTS_PER_THREAD = 64
_OUT_OF_MEMORY = f"ran out of memory (limit {MEMORY_LIMIT_BYTES >> 20} MB)"

# Evaluated once per context, before the user's program. console is a no-op: promptfoo configs log.
_GLUE = r"""
var console = {log: function () {}, info: function () {}, warn: function () {}, error: function () {},
  debug: function () {}};
var __evalh_state = null;
function __evalh_describe(e) {
  if (e && typeof e === "object" && "message" in e) {
    var at = /<input>:(\d+):(\d+)/.exec(String(e.stack || ""));
    return JSON.stringify({thrown: (e.name || "Error") + ": " + e.message, line: at ? +at[1] : null});
  }
  return JSON.stringify({thrown: "threw " + String(e), line: null});
}
function __evalh_encode(v) {
  var t = v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
  var opaque = t === "function" || t === "symbol" || t === "bigint" || t === "undefined";
  if (opaque) return JSON.stringify({t: t});
  return JSON.stringify({t: t, v: v});
}
function __evalh_call(args) {
  __evalh_state = null;
  try {
    var result = __evalh_fn.apply(null, JSON.parse(args));
    if (result && typeof result.then === "function") {
      __evalh_state = {};
      result.then(function (v) { __evalh_state.done = __evalh_encode(v); },
                  function (e) { __evalh_state.done = __evalh_describe(e); });
      return null;
    }
    return __evalh_encode(result);
  } catch (e) {
    return __evalh_describe(e);
  }
}
function __evalh_settled() { return __evalh_state && __evalh_state.done ? __evalh_state.done : null; }
"""


class JsFailed(Exception):
    """The program could not run: a syntax error, a file's top-level code threw, memory ran out."""


@dataclass(frozen=True)
class JsReturned:
    value: Any  # JSON-decoded; None for undefined / null
    type_name: str  # JavaScript's: "boolean", "number", "object", "array", "undefined", ...


@dataclass(frozen=True)
class JsThrown:
    message: str  # "TypeError: x is undefined (line 2)"


def _where(source: JsSource, line: int | None) -> str:
    """`` (line 2)`` of the user's code for inline sources; files name their module's own lines."""
    if line is None or source.line_offset <= 0:
        return ""
    user_line = line - source.line_offset
    return f" (line {user_line})" if user_line >= 1 else ""


def _engine_message(error: Exception) -> str:
    """QuickJS's text without the stack trace it appends."""
    return str(error).split("\n", 1)[0].strip()


def syntax_problem(source: JsSource) -> str | None:
    """Compile ``source`` without running any of the user's code; the syntax error, or None."""
    context = engine().Context()
    context.set_time_limit(1.0)
    context.set_memory_limit(MEMORY_LIMIT_BYTES)
    try:
        context.eval(source.definitions)
    except Exception as error:  # the engine's JSException: any failure to compile
        text = str(error)
        match = re.search(r"<input>:(\d+)(?::(\d+))?", text)
        where = ""
        if match and source.line_offset > 0:
            line = int(match.group(1)) - source.line_offset
            where = f" at line {line}" + (f", column {match.group(2)}" if match.group(2) else "")
            if line > source.user_lines:
                where = " at the end of the code (is something missing?)"
        elif match:
            where = f" at line {match.group(1)} of the combined modules"
        return f"{source.shown}: {_engine_message(error)}{where}"
    return None


def evaluate_once(source: JsSource, expression: str, *, timeout_s: float) -> JsReturned:
    """The value of ``expression`` (plain data) after ``source``'s program ran, in a fresh context on the
    calling thread, for what a config needs to know at load (a provider's own id). The program and the
    expression together have ``timeout_s`` of CPU time and the memory cap; no promise is awaited.

    Raises TimedOut and JsFailed (a throw included)."""
    context = engine().Context()
    context.set_memory_limit(MEMORY_LIMIT_BYTES)
    context.set_time_limit(timeout_s)
    try:
        for code in (_GLUE, source.definitions, source.start):
            if code:
                _checked(context.eval, code)
        reply = _checked(context.eval, f"__evalh_encode({expression})")
    except _Interrupted:
        raise TimedOut(timeout_s) from None
    decoded = _decode(source, str(reply))
    if isinstance(decoded, JsThrown):
        raise JsFailed(decoded.message)
    return decoded


@dataclass
class _Job:
    source: JsSource
    args: str
    timeout_s: float
    loop: asyncio.AbstractEventLoop
    started: asyncio.Future[None]
    done: asyncio.Future[str]
    abandoned: threading.Event = field(default_factory=threading.Event)


class _Interrupted(Exception):
    """The engine stopped the script at its CPU-time limit."""


class _Thread:
    """One daemon thread serving jobs from the shared queue, with its compiled contexts."""

    def __init__(self) -> None:
        self.contexts: collections.OrderedDict[tuple[str, str], Any] = collections.OrderedDict()
        threading.Thread(target=self.serve, name="evalh-javascript", daemon=True).start()

    def serve(self) -> None:
        while True:
            job = _JOBS.get()
            if job.abandoned.is_set():
                continue
            _resolve(job, job.started, None)
            try:
                reply: str | BaseException = self.run(job)
            except Exception as error:  # delivered to the caller, who words it
                reply = error
            _resolve(job, job.done, reply)
            if job.abandoned.is_set():
                return  # replaced already: the caller stopped waiting for this thread

    def context(self, source: JsSource, timeout_s: float) -> Any:
        key = (source.definitions, source.start)
        context = self.contexts.pop(key, None)
        if context is None:
            context = engine().Context()
            context.set_memory_limit(MEMORY_LIMIT_BYTES)
            context.set_time_limit(timeout_s)
            for code in (_GLUE, source.definitions, source.start):
                if code:
                    _checked(context.eval, code)
        self.contexts[key] = context
        while len(self.contexts) > _CONTEXTS_PER_THREAD:
            self.contexts.popitem(last=False)
        return context

    def run(self, job: _Job) -> str:
        try:
            context = self.context(job.source, job.timeout_s)
            context.set_time_limit(job.timeout_s)
            reply = _checked(context.get("__evalh_call"), job.args)
            if reply is None:
                reply = _settle(context, job)
        except BaseException:
            # an interrupted or failed context may hold half-done state: compile afresh next time
            self.contexts.pop((job.source.definitions, job.source.start), None)
            raise
        return str(reply)


def _checked(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except Exception as error:
        text = _engine_message(error)
        if "interrupted" in text:
            raise _Interrupted from None
        if "out of memory" in text:
            raise JsFailed(_OUT_OF_MEMORY) from None
        raise JsFailed(text) from None


def _settle(context: Any, job: _Job) -> str:
    """Run the engine's pending jobs until the returned promise settles (each job has the limits)."""
    deadline = time.monotonic() + job.timeout_s
    settled = context.get("__evalh_settled")
    while not job.abandoned.is_set() and time.monotonic() < deadline:
        reply = _checked(settled)
        if reply is not None:
            return str(reply)
        if not _checked(context.execute_pending_job):
            return json.dumps({"thrown": "the promise it returned never settled", "line": None})
    raise _Interrupted


def _resolve(job: _Job, future: asyncio.Future[Any], value: Any) -> None:
    def deliver() -> None:
        if future.done():
            return
        if isinstance(value, BaseException):
            future.set_exception(value)
        else:
            future.set_result(value)

    try:
        job.loop.call_soon_threadsafe(deliver)
    except RuntimeError:  # the caller's event loop is closed: nobody waits for this job
        job.abandoned.set()


_JOBS: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_LOCK = threading.Lock()
_live = 0


def _ensure_thread() -> None:
    global _live
    with _LOCK:
        if _live < MAX_THREADS:
            _live += 1
            _Thread()


def _retire_thread() -> None:
    """A thread is stuck in an abandoned call: let another take its place."""
    global _live
    with _LOCK:
        _live -= 1


def _encode(args: Sequence[Any]) -> str:
    return json.dumps(list(args), ensure_ascii=False, default=str)


async def call_javascript(
    source: JsSource, args: Sequence[Any], *, timeout_s: float
) -> JsReturned | JsThrown:
    """Call the source's function once with ``args`` (plain data).

    Raises TimedOut (wall or CPU limit) and JsFailed (the program could not run)."""
    loop = asyncio.get_running_loop()
    job = _Job(source, _encode(args), timeout_s, loop, loop.create_future(), loop.create_future())
    _ensure_thread()
    _JOBS.put(job)
    try:
        await job.started
        async with asyncio.timeout(timeout_s):
            reply = await job.done
    except _Interrupted:
        raise TimedOut(timeout_s) from None
    except TimeoutError:
        job.abandoned.set()
        _retire_thread()
        raise TimedOut(timeout_s) from None
    except asyncio.CancelledError:
        job.abandoned.set()
        if job.started.done():
            _retire_thread()
        raise
    return _decode(source, reply)


def _decode(source: JsSource, reply: str) -> JsReturned | JsThrown:
    data = json.loads(reply)
    if "thrown" in data:
        if str(data["thrown"]).startswith("InternalError: out of memory"):  # caught by the glue's catch
            raise JsFailed(_OUT_OF_MEMORY)
        return JsThrown(str(data["thrown"]) + _where(source, data.get("line")))
    return JsReturned(value=data.get("v"), type_name=str(data["t"]))
