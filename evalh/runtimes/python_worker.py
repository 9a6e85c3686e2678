"""The inside of a Python worker process: loads the user's code, calls it, and says what came of it.

evalh (``runtimes/python.py``) sends pickled requests on the worker's stdin and reads pickled outcomes
from the descriptor that was its stdout; the user's ``print`` goes to stderr, and its stdin reads nothing.
Requests: ``("call", target, args)`` calls once; ``("map", target, [args, ...])`` calls once per args
and stops at the first exception. Outcomes: :class:`Returned` (a plain value: numpy values become
Python ones, a value of any other type becomes a :class:`Foreign` naming its type), :class:`Raised`
(the exception and the user's deepest line) or :class:`LoadProblem` (the code cannot be loaded).
Modules are loaded once per worker and file version; inline code is compiled once per text.

This module imports nothing of evalh, so a worker starts in a few tens of milliseconds.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import json
import math
import os
import pickle
import re
import struct
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "INLINE_FILENAME",
    "FileFunction",
    "Foreign",
    "InlineCode",
    "LoadProblem",
    "Outcome",
    "Raised",
    "Returned",
    "compile_inline",
    "frame",
    "parse_inline",
    "plain",
    "read_frame",
    "serve",
]

INLINE_FILENAME = "<inline python assertion>"
_HEADER = struct.Struct(">Q")

UserFunction = Callable[..., Any]


@dataclass(frozen=True)
class InlineCode:
    """Inline code of a ``python`` assertion: the body (or expression) of ``main(output, context)``."""

    code: str


@dataclass(frozen=True)
class FileFunction:
    """``function`` of the file at ``path`` (absolute); ``shown`` names the file in messages."""

    path: str
    function: str
    shown: str


@dataclass(frozen=True)
class Returned:
    value: Any


@dataclass(frozen=True)
class Raised:
    """The user's code raised ``type_name: message``; ``where`` is its deepest line of the user's code."""

    type_name: str
    message: str
    where: str | None = None

    def describe(self) -> str:
        text = f"{self.type_name}: {self.message}" if self.message else self.type_name
        return f"{text} (at {self.where})" if self.where else text


@dataclass(frozen=True)
class LoadProblem:
    """The code cannot be loaded. ``kind``: unreadable, syntax, import or missing-function."""

    kind: str
    text: str


@dataclass(frozen=True)
class Foreign:
    """A returned value of a type that cannot cross processes: only its type's name comes back."""

    type_name: str


Outcome = Returned | Raised | LoadProblem

# ------------------------------------------------------------------------------------ loading code


def parse_inline(code: str) -> list[ast.stmt]:
    """The body of ``main(output, context)`` for inline code: ``return <code>`` if it is one expression,
    else the code itself. Raises SyntaxError. (evalh's config layer parses with it too, so the code it
    checks is the code a worker runs.)"""
    try:
        expression = ast.parse(code.strip(), INLINE_FILENAME, "eval")
        ast.increment_lineno(expression, len(code) - len(code.lstrip("\n")))
        return [ast.Return(value=expression.body)]
    except SyntaxError:
        return ast.parse(_dedent_body(code), INLINE_FILENAME, "exec").body or [ast.Pass()]


@lru_cache(maxsize=2048)
def compile_inline(code: str) -> UserFunction | str:
    """``main(output, context)`` for inline code, or the syntax problem. Runs none of the user's code."""
    try:
        body = parse_inline(code)
    except SyntaxError as error:
        return f"python assertion has a syntax error: {error.msg} (at line {error.lineno} of the code)"
    arguments = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg="output"), ast.arg(arg="context")],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    function = ast.FunctionDef(name="main", args=arguments, body=body, decorator_list=[])
    module = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    try:
        compiled = compile(module, INLINE_FILENAME, "exec")
    except SyntaxError as error:  # errors the parser lets through, e.g. 'await' outside async function
        return f"python assertion has a syntax error: {error.msg} (at line {error.lineno} of the code)"
    namespace: dict[str, Any] = {"__name__": "evalh_inline_assertion", "json": json, "math": math, "re": re}
    exec(compiled, namespace)  # defines main(); runs none of the user's code
    main: UserFunction = namespace["main"]
    return main


def _dedent_body(code: str) -> str:
    lines = code.rstrip().splitlines()  # leading blank lines kept: line numbers stay the user's
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] for line in lines)


_MODULES: dict[str, tuple[tuple[int, int], types.ModuleType]] = {}


def _load_module(path: Path, shown: str) -> types.ModuleType | LoadProblem:
    """The user's module, loaded once per (path, mtime, size)."""
    try:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = _MODULES.get(str(path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or error
        return LoadProblem("unreadable", f"{shown} cannot be read: {reason}")
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as error:
        return LoadProblem("syntax", f"{shown} has a syntax error: {error.msg} (at {shown}:{error.lineno})")
    name = "evalh_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and pickle look their module up here
    sys.path.insert(0, str(path.parent))  # the file may import its neighbours while it loads
    try:
        exec(code, module.__dict__)
    except BaseException as error:  # SystemExit too: a worker outlives the user's code
        sys.modules.pop(name, None)
        return LoadProblem(
            "import", f"importing {shown} raised {_raised(error, str(path), shown).describe()}"
        )
    finally:
        sys.path.remove(str(path.parent))
    _MODULES[str(path)] = (stamp, module)
    return module


def _function(target: InlineCode | FileFunction) -> tuple[UserFunction | LoadProblem, str, str]:
    """(the function or the problem, its filename in tracebacks, the name shown in messages)."""
    if isinstance(target, InlineCode):
        compiled = compile_inline(target.code)
        found = LoadProblem("syntax", compiled) if isinstance(compiled, str) else compiled
        return found, INLINE_FILENAME, "inline code"
    module = _load_module(Path(target.path), target.shown)
    if isinstance(module, LoadProblem):
        return module, target.path, target.shown
    function: Any = module
    for name in target.function.split("."):  # promptfoo's file://x.py:Class.method too
        function = getattr(function, name, None)
    if not callable(function):
        problem = LoadProblem("missing-function", f"{target.shown} has no function {target.function}()")
        return problem, target.path, target.shown
    return function, target.path, target.shown


# ------------------------------------------------------------------------------------ calling code


def _raised(error: BaseException, filename: str, shown: str) -> Raised:
    """The exception, pointing at the user's deepest line."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [frame for frame in frames if frame.filename == filename]
    frame = own[-1] if own else (frames[-1] if frames else None)
    where = None
    if frame is not None and frame.filename == INLINE_FILENAME:
        where = f"line {frame.lineno} of the code"
    elif frame is not None:
        where = f"{shown if frame.filename == filename else frame.filename}:{frame.lineno}"
    return Raised(type(error).__name__, str(error), where)


def plain(value: Any) -> Any:
    """``value`` as data any Python can unpickle: containers copied, numpy values as Python ones."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        return plain(tolist())
    return Foreign(type(value).__name__)


_LOOP: Any = None


def _settle(result: Any) -> Any:
    """An awaitable's value, on the worker's one event loop; anything else as it is."""
    global _LOOP
    if not inspect.isawaitable(result):
        return result
    import asyncio  # only workers that meet async code pay for it

    async def wait() -> Any:
        return await result

    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    return _LOOP.run_until_complete(wait())


def _call(target: InlineCode | FileFunction, calls: list[tuple[Any, ...]], many: bool) -> Outcome:
    function, filename, shown = _function(target)
    if isinstance(function, LoadProblem):
        return function
    values = []
    for args in calls:
        try:
            values.append(plain(_settle(function(*args))))
        except BaseException as error:  # SystemExit and KeyboardInterrupt are the user's too
            return _raised(error, filename, shown)
    return Returned(values if many else values[0])


def handle(request: tuple[Any, ...]) -> Outcome:
    kind, target, payload = request
    if kind == "map":
        return _call(target, list(payload), many=True)
    return _call(target, [payload], many=False)


# ------------------------------------------------------------------------------------- the channel


def read_frame(fd: int) -> bytes | None:
    """One length-prefixed frame from a blocking descriptor; None at end of file."""
    header = _read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    return _read_exactly(fd, size)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload)) + payload


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _watch_parent(parent: int) -> None:
    """Exit when evalh is gone, even while the user's code loops (it may never read its stdin again)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="evalh-parent-watch", daemon=True).start()


def _reply(outcome: Outcome) -> bytes:
    try:
        return pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # e.g. a dict key of a foreign type
        cannot = Raised(type(error).__name__, f"evalh cannot read back what the code returned: {error}")
        return pickle.dumps(cannot, protocol=pickle.HIGHEST_PROTOCOL)


def serve(parent: int) -> None:
    """Answer requests until evalh closes the channel (or goes away)."""
    _watch_parent(parent)
    inbox, outbox = os.dup(0), os.dup(1)
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)  # the user's code reads nothing rather than evalh's requests
    os.dup2(2, 1)  # and its print() goes to stderr rather than into evalh's replies
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    while (request := read_frame(inbox)) is not None:
        _write_all(outbox, frame(_reply(handle(pickle.loads(request)))))
