"""TypeScript and ES modules, turned into the CommonJS the JavaScript engine runs.

The compiler is TypeScript's own (``ts.transpileModule``, TypeScript 5.7 as shipped in the ``dukpy``
wheel's ``jsmodules/typescriptServices.js``), run inside the same embedded QuickJS engine as user code:
no Node, no subprocess, no file or network access, with a memory cap and a CPU deadline. Each file is
compiled on its own (``isolatedModules``: types are erased, never checked), to CommonJS for ES2022, so
``import``/``export`` become ``require``/``exports`` that :mod:`evalh.runtimes.javascript_source` bundles.

Loading the compiler costs about 0.9 s of CPU once per process; a file then takes 10-25 ms. Each output
is kept in memory and on disk (``<cache dir>/typescript/<sha256>.js``, keyed by the source, the compiler's
version and the options), so a re-run loads no compiler. ``EVALH_CACHE_ENABLED=false`` keeps it off disk;
a cache that cannot be written is simply not used.

A QuickJS context belongs to the thread that made it, so the compiler lives on one daemon thread of its
own and callers wait for its answer.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import importlib.resources
import json
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

from evalh.common.cache_location import cache_dir, cache_enabled, write_cache_file
from evalh.runtimes.quickjs_engine import MEMORY_LIMIT_BYTES, engine

__all__ = [
    "COMPILER_OPTIONS",
    "TranspileFailed",
    "clear_compiled",
    "compiled_files",
    "compiler_loads",
    "transpile",
]

# CommonJS for the engine's language level; esModuleInterop so `import x from './y.json'` and a CommonJS
# module's default import work as in Node.
COMPILER_OPTIONS = {"module": "CommonJS", "target": "ES2022", "esModuleInterop": True}
_COMPILER_PACKAGE = "dukpy"
_COMPILER_FILE = ("jsmodules", "typescriptServices.js")
_LOAD_LIMIT_S = 30.0  # CPU seconds to load the 9 MB compiler (0.9 s measured)
_FILE_LIMIT_S = 10.0  # CPU seconds to compile one file
_WAIT_S = 300.0  # wall-clock bound on one answer (the engine's limits count CPU time, shared by threads)
# The name the compiler is given: it keeps an .mjs/.mts file as an ES module whatever `module` says, so
# those are compiled under the name of the same language's CommonJS-neutral suffix.
_COMPILED_AS = {".mjs": ".js", ".mts": ".ts"}
_UNSUPPORTED = {
    "await": "top-level await is not supported (evalh runs modules as CommonJS): move the await inside the "
    "exported function, which may be async",
    "import.meta": "import.meta is not available (evalh runs modules as CommonJS, in a sandbox with no "
    "file access): pass what it was for through the test's vars or the assertion's config",
}
_FIX = "pip install dukpy (a dependency of evalh that ships TypeScript's compiler; reinstall evalh)"

# Evaluated after the compiler: one call per file, answering JSON {out, problems, unsupported}: the
# syntax errors, then the first thing CommonJS cannot do (a top-level await, import.meta), located.
_ENTRY = r"""
function __evalh_where(file, start) {
  var at = file.getLineAndCharacterOfPosition(start);
  return (at.line + 1) + ":" + (at.character + 1);
}
function __evalh_unsupported(text, name) {
  var awaits = text.indexOf("await") >= 0, meta = text.indexOf("import.meta") >= 0;
  if (!awaits && !meta) return null;
  var file = ts.createSourceFile(name, text, ts.ScriptTarget.ES2022, true);
  var found = null;
  function visit(node, top) {
    if (found) return;
    var inner = top && !ts.isFunctionLike(node) && !ts.isClassLike(node);
    if (meta && ts.isMetaProperty(node) && node.keywordToken === ts.SyntaxKind.ImportKeyword) {
      found = {where: __evalh_where(file, node.getStart(file)), what: "import.meta"};
    } else if (top && (node.kind === ts.SyntaxKind.AwaitExpression ||
                       (ts.isForOfStatement(node) && node.awaitModifier))) {
      found = {where: __evalh_where(file, node.getStart(file)), what: "await"};
    }
    if (!found && (meta || inner)) ts.forEachChild(node, function (child) { visit(child, inner); });
  }
  ts.forEachChild(file, function (child) { visit(child, true); });
  return found;
}
function __evalh_transpile(text, name, options) {
  var given = JSON.parse(options);
  var result = ts.transpileModule(text, {fileName: name, reportDiagnostics: true, compilerOptions: {
    module: ts.ModuleKind[given.module], target: ts.ScriptTarget[given.target],
    esModuleInterop: given.esModuleInterop}});
  var problems = (result.diagnostics || []).filter(function (d) {
    return d.category === ts.DiagnosticCategory.Error;
  }).map(function (d) {
    var where = d.file && d.start !== undefined ? __evalh_where(d.file, d.start) : null;
    return {where: where, message: ts.flattenDiagnosticMessageText(d.messageText, "\n"), code: d.code};
  });
  return JSON.stringify({out: result.outputText, problems: problems,
    unsupported: problems.length ? null : __evalh_unsupported(text, name)});
}
"""


class TranspileFailed(Exception):
    """The file is not valid TypeScript/JavaScript, or the compiler could not run; the message says where."""


@dataclass(frozen=True)
class _Job:
    text: str
    name: str  # the file's name: its suffix tells the compiler TypeScript from JavaScript
    answer: concurrent.futures.Future[str]


_JOBS: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_LOCK = threading.Lock()
_MEMO: dict[str, str] = {}  # cache key -> CommonJS output, for this process
_state = {"thread_pid": 0, "loads": 0}  # the process whose compiler thread runs (a fork has none)


def compiler_loads() -> int:
    """How many times this process has loaded the compiler (each costs ~0.9 s of CPU)."""
    return _state["loads"]


def _compiler_text() -> str:
    try:
        resource = importlib.resources.files(_COMPILER_PACKAGE).joinpath(*_COMPILER_FILE)
        return resource.read_text(encoding="utf-8")
    except (ImportError, OSError) as error:
        raise TranspileFailed(f"TypeScript's compiler is not installed ({error}); {_FIX}") from None


@functools.cache
def _compiler_version() -> str:
    import importlib.metadata  # lazy: ~30 ms, only configs with TypeScript or ES modules pay for it

    try:
        return f"{_COMPILER_PACKAGE}=={importlib.metadata.version(_COMPILER_PACKAGE)}"
    except importlib.metadata.PackageNotFoundError:
        raise TranspileFailed(f"TypeScript's compiler is not installed; {_FIX}") from None


def _load_compiler() -> object:
    context = engine().Context()
    context.set_memory_limit(MEMORY_LIMIT_BYTES)
    context.set_time_limit(_LOAD_LIMIT_S)
    context.eval(_compiler_text())
    context.eval(_ENTRY)
    _state["loads"] += 1
    return context


def _serve() -> None:
    """The compiler's thread: one context, built on the first job and rebuilt after a failure."""
    context: object | None = None
    while True:
        job = _JOBS.get()
        try:
            if context is None:
                context = _load_compiler()
            context.set_time_limit(_FILE_LIMIT_S)  # type: ignore[attr-defined]
            entry = context.get("__evalh_transpile")  # type: ignore[attr-defined]
            job.answer.set_result(str(entry(job.text, job.name, json.dumps(COMPILER_OPTIONS))))
        except TranspileFailed as error:
            job.answer.set_exception(error)
        except Exception as error:  # the engine's: out of memory, interrupted, a compiler bug
            context = None
            job.answer.set_exception(TranspileFailed(f"{job.name}: {_engine_failure(error)}"))


def _engine_failure(error: Exception) -> str:
    """What the engine's own words ("InternalError: interrupted") mean for the user, and what to do."""
    reason = str(error).split("\n", 1)[0]
    if "interrupted" in reason:
        return (
            f"TypeScript's compiler took more than {_FILE_LIMIT_S:g} s of CPU on this file (too large or "
            "too deeply nested): split it into smaller files, or ship it as plain JavaScript (.js)"
        )
    if "out of memory" in reason:
        return (
            f"TypeScript's compiler ran out of memory (limit {MEMORY_LIMIT_BYTES >> 20} MB) on this file: "
            "split it into smaller files, or ship it as plain JavaScript (.js)"
        )
    if "call stack" in reason:
        return (
            "TypeScript's compiler ran out of stack: the file nests expressions too deeply; "
            "write it with less nesting, or ship it as plain JavaScript (.js)"
        )
    return f"TypeScript's compiler failed: {reason}"


def _compile(text: str, name: str) -> str:
    with _LOCK:
        if _state["thread_pid"] != os.getpid():
            _state["thread_pid"] = os.getpid()
            threading.Thread(target=_serve, name="evalh-typescript", daemon=True).start()
    answer: concurrent.futures.Future[str] = concurrent.futures.Future()
    _JOBS.put(_Job(text, name, answer))
    try:
        return answer.result(timeout=_WAIT_S)
    except concurrent.futures.TimeoutError:
        raise TranspileFailed(
            f"{name}: TypeScript's compiler did not answer within {_WAIT_S:.0f} s"
        ) from None


def _cache_key(text: str, suffix: str) -> str:
    identity = json.dumps([_compiler_version(), COMPILER_OPTIONS, suffix, text], sort_keys=True)
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()


def _folder() -> Path:
    return cache_dir() / "typescript"


def compiled_files() -> list[Path]:
    """The compiled files kept on disk (``evalh cache info``)."""
    return sorted(_folder().glob("*.js")) if _folder().is_dir() else []


def clear_compiled() -> int:
    """Delete the compiled files kept on disk (``evalh cache clear``); how many there were."""
    removed = 0
    for path in compiled_files():
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:  # another process cleared it meanwhile
            continue
    return removed


def _cached(key: str) -> str | None:
    if not cache_enabled():
        return None
    try:
        return (_folder() / f"{key}.js").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _store(key: str, output: str) -> None:
    """Write atomically; a cache that cannot be written is not a reason to fail."""
    if cache_enabled():
        write_cache_file(_folder() / f"{key}.js", [output.encode("utf-8")], prefix=f".{key}.")


def transpile(text: str, path: Path, shown: str) -> str:
    """``text`` (the file at ``path``, named ``shown`` in messages) as a CommonJS module body.

    Raises TranspileFailed with ``shown:line:col`` for a syntax error, a top-level ``await`` or
    ``import.meta``."""
    key = _cache_key(text, path.suffix.lower())
    output = _MEMO.get(key)
    if output is None:
        output = _cached(key)
    if output is None:
        suffix = path.suffix.lower()
        reply = json.loads(_compile(text, path.with_suffix(_COMPILED_AS.get(suffix, suffix)).name))
        if reply["problems"]:
            first = reply["problems"][0]
            where = f"{shown}:{first['where']}" if first["where"] else shown
            more = f" (and {len(reply['problems']) - 1} more)" if len(reply["problems"]) > 1 else ""
            raise TranspileFailed(f"{where}: {first['message']} (TS{first['code']}){more}")
        if reply["unsupported"]:
            found = reply["unsupported"]
            raise TranspileFailed(f"{shown}:{found['where']}: {_UNSUPPORTED[found['what']]}")
        output = str(reply["out"])
        _store(key, output)
    _MEMO[key] = output
    return output
