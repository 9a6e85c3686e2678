"""The ``python`` assertion: your own Python code decides, with promptfoo's contract.

The value is inline code or ``file://path.py[:function]`` (default function ``get_assert``; the path is
relative to the config file's folder). Inline code that is one expression becomes
``return <expression>`` inside ``main(output, context)``; anything else is that function's body
(``json``, ``re`` and ``math`` are already imported for inline code).
The function gets the raw ``output`` and ``context = {prompt, vars, test, config}`` and returns a bool,
a number (passes if > 0 without a threshold, else if >= threshold; the score is the number) or a dict
``{pass, score, reason}`` (``pass_`` accepted; with a threshold, a score must also reach it). An async
function is awaited. Code is compiled once: inline code by its text, files by path and modification
time. An exception in the user's code is an ERROR row naming the exception and the line, never a
traceback. The code runs in evalh's process, on the event loop: keep it quick.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import json
import math
import re
import sys
import traceback
import types
from collections.abc import Awaitable, Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion
from evalh.model import AssertionResult, Measurement, TestCase

__all__ = ["compile_inline", "interpret_result", "split_file_target"]

_INLINE_FILENAME = "<inline python assertion>"
_DEFAULT_FUNCTION = "get_assert"

UserFunction = Callable[[Any, dict[str, Any]], Any]


# ----------------------------------------------------------------------------------- loading code


@lru_cache(maxsize=2048)
def compile_inline(code: str) -> UserFunction | str:
    """``main(output, context)`` for inline code, or the syntax problem. Runs none of the user's code."""
    try:
        expression = ast.parse(code.strip(), _INLINE_FILENAME, "eval")
        ast.increment_lineno(expression, len(code) - len(code.lstrip("\n")))
        body: list[ast.stmt] = [ast.Return(value=expression.body)]
    except SyntaxError:
        try:
            body = ast.parse(_dedent_body(code), _INLINE_FILENAME, "exec").body or [ast.Pass()]
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
        compiled = compile(module, _INLINE_FILENAME, "exec")
    except SyntaxError as error:  # errors the parser lets through, e.g. 'await' outside async function
        return f"python assertion has a syntax error: {error.msg} (at line {error.lineno} of the code)"
    namespace: dict[str, Any] = {"__name__": "evalh_inline_assertion", "json": json, "math": math, "re": re}
    exec(compiled, namespace)
    main: UserFunction = namespace["main"]
    return main


def _dedent_body(code: str) -> str:
    lines = code.rstrip().splitlines()  # leading blank lines kept: line numbers stay the user's
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] for line in lines)


def split_file_target(value: str) -> tuple[str, str]:
    """``file://checks.py:grade`` -> ("checks.py", "grade"); the function defaults to get_assert."""
    target = value.removeprefix("file://")
    path, sep, function = target.rpartition(":")
    if sep and path.endswith(".py") and function.isidentifier():
        return path, function
    return target, _DEFAULT_FUNCTION


_FILES: dict[str, tuple[tuple[int, int], types.ModuleType]] = {}


def _load_module(path: Path, shown: str) -> types.ModuleType | str:
    """The user's module, loaded once per (path, mtime, size); a problem text if it cannot load."""
    try:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = _FILES.get(str(path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return f"python assertion file {shown} cannot be read: {getattr(error, 'strerror', None) or error}"
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as error:
        return f"python assertion file {shown} has a syntax error: {error.msg} (at {shown}:{error.lineno})"
    name = "evalh_assertion_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and pickle look their module up here
    sys.path.insert(0, str(path.parent))  # the file may import its neighbours while it loads
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as error:
        sys.modules.pop(name, None)
        return f"importing {shown} raised {_describe(error, str(path), shown)}"
    finally:
        sys.path.remove(str(path.parent))
    _FILES[str(path)] = (stamp, module)
    return module


def _file_function(value: str, config_dir: Path | None) -> tuple[UserFunction | str, str, str]:
    """(function or problem, filename in tracebacks, name shown in reasons) for a file:// value."""
    shown, function_name = split_file_target(value)
    path = Path(shown).expanduser()
    if not path.is_absolute():
        path = (config_dir or Path.cwd()) / path
    module = _load_module(path, shown)
    if isinstance(module, str):
        return module, str(path), shown
    function = getattr(module, function_name, None)
    if not callable(function):
        return f"python assertion file {shown} has no function {function_name}()", str(path), shown
    return function, str(path), shown


# --------------------------------------------------------------------------------- running code


def _describe(error: BaseException, filename: str, shown: str) -> str:
    """``ValueError: message (at file.py:12)``, pointing at the user's deepest line."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [frame for frame in frames if frame.filename == filename]
    frame = own[-1] if own else (frames[-1] if frames else None)
    message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if frame is None:
        return message
    if frame.filename == _INLINE_FILENAME:
        return f"{message} (at line {frame.lineno} of the code)"
    place = shown if frame.filename == filename else frame.filename
    return f"{message} (at {place}:{frame.lineno})"


def _test_dict(test: TestCase) -> dict[str, Any]:
    return {
        "description": test.description,
        "vars": dict(test.vars),
        "assert": [dict(spec.raw) or {"type": spec.full_type, "value": spec.value} for spec in test.asserts],
        "threshold": test.threshold,
        "options": dict(test.options),
        "metadata": dict(test.metadata),
    }


def _context_dict(ctx: AssertionContext) -> dict[str, Any]:
    return {
        "prompt": ctx.prompt,
        "vars": dict(ctx.vars),
        "test": _test_dict(ctx.test),
        "config": dict(ctx.config),
    }


def _plain(value: Any) -> Any:
    """numpy scalars (np.bool_, np.float32...) as Python values."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes | Mapping | list | tuple):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


def _number(value: Any) -> float | None:
    value = _plain(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _returned(score: float, why: str = "", user_reason: str = "") -> Measurement:
    """A returned score for scoring.py: "Python assertion returned 0.4, which is less than threshold
    0.5", or without a threshold "..., which is greater than 0"."""
    subject = f"Python assertion returned {why}{' with score ' if why else ''}{score:g}, which"
    return Measurement(
        value=score,
        subject=subject,
        suffix=f": {user_reason}" if user_reason else "",
        plain=user_reason or None,
        verdict=None,
    )


def _interpret_mapping(result: Mapping[str, Any]) -> AssertionResult | Measurement:
    verdict = _plain(result["pass"] if "pass" in result else result.get("pass_"))
    raw_score = result.get("score")
    score = None if raw_score is None else _number(raw_score)
    if raw_score is not None and score is None:
        return AssertionResult.failure(f"python assertion returned a non-numeric score {raw_score!r}")
    if verdict is not None and not isinstance(verdict, bool):
        return AssertionResult.failure(f"python assertion returned a non-boolean pass {verdict!r}")
    if verdict is None and score is None:
        return AssertionResult.failure("python assertion returned a dict without 'pass' or 'score'")
    reason = result.get("reason")
    user_reason = str(reason) if reason not in (None, "") else ""
    if score is None:  # a verdict alone: no threshold to compare
        text = user_reason or f"Python assertion returned pass={verdict}"
        return AssertionResult(passed=bool(verdict), score=float(bool(verdict)), reason=text)
    if verdict is None:
        return _returned(score, user_reason=user_reason)
    measured = _returned(score, f"pass={verdict}", user_reason)
    # with a threshold, the score must also reach it
    return dataclasses.replace(
        measured, verdict=verdict, plain=user_reason or f"Python assertion returned pass={verdict}"
    )


def _parse_text_result(text: str) -> Any:
    """ "true"/"false" as a bool, numeric text as a float, anything else unchanged."""
    stripped = text.strip().lower()
    if stripped in ("true", "false"):
        return stripped == "true"
    try:
        return float(stripped)
    except ValueError:
        return text


def interpret_result(result: Any) -> AssertionResult | Measurement:
    """The user's return value: bool, number, dict, or "true"/"false"/numeric text; a score is a
    measurement that scoring.py compares with the threshold."""
    result = _plain(result)
    if isinstance(result, str):
        result = _parse_text_result(result)
    if isinstance(result, bool):
        return AssertionResult(
            passed=result, score=float(result), reason=f"Python assertion returned {result}"
        )
    score = _number(result)
    if score is not None:
        return _returned(score)
    if isinstance(result, Mapping):
        return _interpret_mapping(result)
    hint = " (did the code forget to return?)" if result is None else ""
    return AssertionResult.failure(
        "python assertion must return a bool, a number or a dict {pass, score, reason}; "
        f"got {type(result).__name__}{hint}"
    )


async def _await_result(pending: Awaitable[Any], filename: str, shown: str) -> AssertionResult | Measurement:
    try:
        result = await pending
    except (Exception, SystemExit) as error:
        return AssertionResult.failure(f"python assertion raised {_describe(error, filename, shown)}")
    return interpret_result(result)


# -------------------------------------------------------------------------------------- the type


def _check_python(value: Any, _config: Mapping[str, Any]) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "python needs code or file://path.py[:function] as its value"
    if value.startswith("file://"):
        path, _ = split_file_target(value)
        return None if path.endswith(".py") else f"python assertion files must end in .py (got {path})"
    compiled = compile_inline(value)
    return compiled if isinstance(compiled, str) else None


@assertion(
    "python",
    family="scripted",
    description="Python code (inline or file://x.py[:fn]) returns a bool, a score or {pass, score, reason}",
    requires_value=True,
    threshold_meaning="min score (optional; without one a score must be above 0)",
    direction="higher",
    check=_check_python,
)
def python_assertion(
    ctx: AssertionContext,
) -> AssertionResult | Measurement | Awaitable[AssertionResult | Measurement]:
    problem = _check_python(ctx.value, ctx.config)
    if problem:
        return AssertionResult.failure(problem)
    value: str = ctx.value
    if value.startswith("file://"):
        function, filename, shown = _file_function(value, ctx.config_dir)
    else:
        function, filename, shown = compile_inline(value), _INLINE_FILENAME, "inline code"
    if isinstance(function, str):
        return AssertionResult.failure(function)
    try:
        result = function(ctx.output, _context_dict(ctx))
    except (Exception, SystemExit) as error:
        return AssertionResult.failure(f"python assertion raised {_describe(error, filename, shown)}")
    if inspect.isawaitable(result):
        return _await_result(result, filename, shown)
    return interpret_result(result)
