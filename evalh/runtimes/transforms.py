"""promptfoo's output transforms: ``options.transform`` (``postprocess`` is its old name) and an
assertion's own ``transform`` (``src/util/transform.ts``).

A transform is JavaScript of ``(output, context)`` with the ``javascript`` assertion's wrapping (one line
gets ``return``), or ``file://x.js[:fn]`` (CommonJS, as there), or ``file://x.py[:fn]`` (default function
``get_transform``, run in a Python worker). Its return value replaces the output: ``options.transform``
before every assertion of the test, an assertion's ``transform`` before that assertion only, after the
test's. ``context`` is ``{vars, prompt, metadata}`` (the provider's response metadata).

A transform that throws, times out or returns nothing usable makes an ERROR row ("Transform failed:
..."), like promptfoo. ``transformVars`` and ``contextTransform`` are not run by evalh: validation
refuses them by name rather than ignoring them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript, syntax_problem
from evalh.runtimes.javascript_source import JsFileProblem, file_source, inline_source
from evalh.runtimes.python import FileFunction, LoadProblem, Raised, WorkerLost, call_python

__all__ = [
    "OUTPUT_TRANSFORM_KEYS",
    "REFUSED_OPTION_KEYS",
    "TransformFailed",
    "apply_transform",
    "is_python_file",
    "output_transform",
    "python_file_target",
    "transform_problem",
]

OUTPUT_TRANSFORM_KEYS = ("transform", "postprocess")  # options keys; postprocess is the deprecated name
REFUSED_OPTION_KEYS = {
    "transformVars": "evalh does not run transformVars; compute the vars in the test or a vars file",
}
_PY_DEFAULT = "get_transform"


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
    return FileFunction(str(resolved), function, path)


def is_python_file(value: str) -> bool:
    """True for ``file://x.py[:fn]``."""
    return value.startswith("file://") and value.removeprefix("file://").rsplit(":", 1)[0].endswith(".py")


def transform_problem(value: Any, config_dir: Path | None) -> str | None:
    """What is wrong with a transform as written (validate), or None. Runs none of its code."""
    if not isinstance(value, str) or not value.strip():
        return "a transform is JavaScript code or a file://x.js[:fn] / file://x.py[:fn] path"
    if is_python_file(value):
        target = python_file_target(value, config_dir)
        return None if Path(target.path).is_file() else f"transform file {target.shown} was not found"
    try:
        source = file_source(value, config_dir) if value.startswith("file://") else inline_source(value)
    except JsFileProblem as error:
        return str(error)
    return source.problems[0] if source.problems else syntax_problem(source)


async def apply_transform(
    value: str, output: Any, context: Mapping[str, Any], *, config_dir: Path | None, timeout_s: float
) -> Any:
    """The transformed output; raises TransformFailed."""
    args = (output, dict(context))
    try:
        if is_python_file(value):
            return await _python(value, args, config_dir, timeout_s)
        source = file_source(value, config_dir) if value.startswith("file://") else inline_source(value)
        outcome = await call_javascript(source, args, timeout_s=timeout_s)
    except (TimedOut, JsFailed, JsFileProblem, WorkerLost) as error:
        raise TransformFailed(str(error) or type(error).__name__) from None
    if isinstance(outcome, JsThrown):
        raise TransformFailed(f"threw {outcome.message}")
    if outcome.type_name in ("undefined", "function", "symbol", "bigint"):
        raise TransformFailed(f"returned {outcome.type_name} (did the code forget to return?)")
    return outcome.value


async def _python(value: str, args: tuple[Any, ...], config_dir: Path | None, timeout_s: float) -> Any:
    outcome = await call_python(python_file_target(value, config_dir), args, timeout_s=timeout_s)
    if isinstance(outcome, LoadProblem):
        raise TransformFailed(outcome.text)
    if isinstance(outcome, Raised):
        raise TransformFailed(f"raised {outcome.describe()}")
    return outcome.value
