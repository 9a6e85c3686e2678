"""promptfoo's transforms (``src/util/transform.ts``): ``options.transform`` (``postprocess`` is its old
name), an assertion's own ``transform``, ``options.transformVars``, an assertion's ``contextTransform``
and a provider's ``transform``. Where each applies in a run: ``runner/transforming.py`` (and
``config/build.py`` for ``transformVars``).

A transform is JavaScript of ``(output, context)`` (``(vars, context)`` for ``transformVars``) with the
``javascript`` assertion's wrapping (one line gets ``return``), or ``file://x.js[:fn]`` (CommonJS, an ES
module or TypeScript, as there), or ``file://x.py[:fn]`` (default function ``get_transform``, run in a
Python worker). A transform that throws, times out or returns nothing usable raises
:class:`TransformFailed`.
"""

from __future__ import annotations

import contextvars
import functools
import uuid
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.runtimes.callables import CallFailed, call_function, lookup
from evalh.runtimes.javascript_source import JsFileProblem, JsSource, file_source, inline_source

if TYPE_CHECKING:  # the runtimes themselves are imported by a config that has a transform
    import concurrent.futures

    from evalh.runtimes.python import FileFunction

__all__ = [
    "OUTPUT_TRANSFORM_KEYS",
    "VARS_TRANSFORM_KEY",
    "TransformFailed",
    "apply_transform",
    "is_python_file",
    "output_transform",
    "python_file_target",
    "run_blocking",
    "transform_problem",
    "transform_vars",
    "value_kind",
    "vars_transform_problem",
]

OUTPUT_TRANSFORM_KEYS = ("transform", "postprocess")  # options keys; postprocess is the deprecated name
VARS_TRANSFORM_KEY = "transformVars"
_PY_DEFAULT = "get_transform"
_OUTPUT_PARAMS = ("output", "context")
_VARS_PARAMS = ("vars", "context")  # promptfoo names the first parameter after what it transforms


@functools.cache
def _bridge() -> concurrent.futures.ThreadPoolExecutor:
    import concurrent.futures  # made by the first blocking call (a config without code makes none)

    return concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="evalh-blocking")


class TransformFailed(Exception):
    """The transform could not produce an output; the message says why."""


def output_transform(options: Mapping[str, Any]) -> str | None:
    """The test's output transform (``transform``, else ``postprocess``), or None."""
    for key in OUTPUT_TRANSFORM_KEYS:
        value = options.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def python_file_target(value: str, config_dir: Path | None, default: str = _PY_DEFAULT) -> FileFunction:
    """``file://x.py[:fn]`` as a function to call (``default`` when none is named), resolved from
    ``config_dir``."""
    target = value.removeprefix("file://")
    path, sep, function = target.rpartition(":")
    if not (sep and path.endswith(".py") and all(part.isidentifier() for part in function.split("."))):
        path, function = target, default
    resolved = (config_dir or Path.cwd()) / Path(path).expanduser()
    from evalh.runtimes.python import FileFunction

    return FileFunction(str(resolved), function, path)


def is_python_file(value: str) -> bool:
    """True for ``file://x.py[:fn]``."""
    return value.startswith("file://") and value.removeprefix("file://").rsplit(":", 1)[0].endswith(".py")


def transform_problem(
    value: Any, config_dir: Path | None, params: tuple[str, ...] = _OUTPUT_PARAMS
) -> str | None:
    """What is wrong with a transform as written (validate), or None. Runs none of its code."""
    if lookup(value) is not None:  # a callable passed to evalh.evaluate
        return None
    if not isinstance(value, str) or not value.strip():
        return "a transform is JavaScript code or a file://x.js[:fn] / file://x.py[:fn] path"
    if is_python_file(value):
        target = python_file_target(value, config_dir)
        return None if Path(target.path).is_file() else f"transform file {target.shown} was not found"
    try:
        source = _js_source(value, config_dir, params)
    except JsFileProblem as error:
        return str(error)
    from evalh.runtimes.javascript import syntax_problem

    return source.problems[0] if source.problems else syntax_problem(source)


def _js_source(value: str, config_dir: Path | None, params: tuple[str, ...]) -> JsSource:
    return file_source(value, config_dir) if value.startswith("file://") else inline_source(value, params)


async def apply_transform(
    value: str,
    output: Any,
    context: Mapping[str, Any],
    *,
    config_dir: Path | None,
    timeout_s: float,
    params: tuple[str, ...] = _OUTPUT_PARAMS,
) -> Any:
    """The transformed output; raises TransformFailed."""
    from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript
    from evalh.runtimes.python import WorkerLost

    args = (output, dict(context))
    try:
        if lookup(value) is not None:
            return await call_function(value, args, timeout_s=timeout_s)
        if is_python_file(value):
            return await _python(value, args, config_dir, timeout_s)
        source = _js_source(value, config_dir, params)
        outcome = await call_javascript(source, args, timeout_s=timeout_s)
    except (TimedOut, JsFailed, JsFileProblem, WorkerLost, CallFailed) as error:
        raise TransformFailed(str(error) or type(error).__name__) from None
    if isinstance(outcome, JsThrown):
        raise TransformFailed(f"threw {outcome.message}")
    if outcome.type_name in ("undefined", "function", "symbol", "bigint"):
        raise TransformFailed(f"returned {outcome.type_name} (did the code forget to return?)")
    return outcome.value


async def _python(value: str, args: tuple[Any, ...], config_dir: Path | None, timeout_s: float) -> Any:
    from evalh.runtimes.python import LoadProblem, Raised, call_python

    outcome = await call_python(python_file_target(value, config_dir), args, timeout_s=timeout_s)
    if isinstance(outcome, LoadProblem):
        raise TransformFailed(outcome.text)
    if isinstance(outcome, Raised):
        raise TransformFailed(f"raised {outcome.describe()}")
    return outcome.value


def vars_transform_problem(value: Any, config_dir: Path | None) -> str | None:
    """What is wrong with an ``options.transformVars`` as written (validate), or None."""
    return transform_problem(value, config_dir, _VARS_PARAMS)


def transform_vars(
    value: str, variables: Mapping[str, Any], *, config_dir: Path | None, timeout_s: float
) -> dict[str, Any]:
    """``options.transformVars`` run on a test's vars: the vars it returns, to merge over the test's
    (promptfoo: ``{...vars, ...transformed}``). The context is promptfoo's ``{prompt: {}, uuid}``.
    Blocks (it runs while the config loads); raises TransformFailed, also for a result that is not an
    object of vars."""
    context = {"prompt": {}, "uuid": str(uuid.uuid4())}

    def start() -> Coroutine[Any, Any, Any]:
        return apply_transform(
            value, dict(variables), context, config_dir=config_dir, timeout_s=timeout_s, params=_VARS_PARAMS
        )

    result = run_blocking(start)
    if not isinstance(result, dict):
        raise TransformFailed(
            f"returned {value_kind(result)}; it must return an object of vars ({{name: value}})"
        )
    return result


def value_kind(value: Any) -> str:
    """What a transform returned, in JavaScript's words (``an array``, ``null``), for messages."""
    names = {type(None): "null", list: "an array", str: "a string", bool: "a boolean", dict: "an object"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def run_blocking(start: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine of the runtimes to its end from synchronous code, on a helper thread with an
    event loop of its own (the caller's loop, if any, is left alone: it may be the one waiting). The
    thread runs in a copy of the caller's context (the run's Python callables among it)."""
    import asyncio  # a run has it already; loading a config without code never needs it

    context = contextvars.copy_context()
    return _bridge().submit(context.run, lambda: asyncio.run(start())).result()
