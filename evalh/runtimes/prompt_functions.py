"""promptfoo's prompt functions (``src/prompts/processors/{python,javascript}.ts``): a prompt that is
``file://prompt.py:fn`` or ``file://prompt.js[:fn]`` is code the config author named, called once per
row with ``{vars, provider: {id, label}}``; what it returns is the prompt, not rendered again.

A named Python function runs in the worker pool; a Python file without ``:fn`` runs as a script, as in
promptfoo: ``python prompt.py '<context as JSON>'`` in its own process group, its standard output
(less one final newline) being the prompt. JavaScript runs in quickjs-ng (``module.exports`` when no
function is named). Each has a deadline. A string is the prompt; a list
of ``{role, content}`` messages is a chat prompt; ``{prompt: ...}`` gives its ``prompt``; any other
object is sent as its JSON, as promptfoo does. Anything else, a raise or a timeout is an ERROR row.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript, syntax_problem
from evalh.runtimes.javascript_source import JsFileProblem, file_source
from evalh.runtimes.processes import run_program
from evalh.runtimes.python import LoadProblem, Raised, WorkerLost, call_python
from evalh.runtimes.transforms import is_python_file, python_file_target

__all__ = [
    "PROMPT_FUNCTION_SUFFIXES",
    "PromptFunctionFailed",
    "call_prompt_function",
    "prompt_function_problem",
    "script_problem",
]

PROMPT_FUNCTION_SUFFIXES = (".py", ".js", ".cjs")
_WHOLE_SCRIPT = ""  # the "function" of file://x.py without :fn: the file runs as a script


class PromptFunctionFailed(Exception):
    """The prompt function gave no prompt; the message says why."""


def prompt_function_problem(ref: str, config_dir: Path | None) -> str | None:
    """What is wrong with a prompt function as written (validate), or None. Runs none of its code."""
    return script_problem(ref, config_dir, _WHOLE_SCRIPT)


def script_problem(ref: str, config_dir: Path | None, python_default: str) -> str | None:
    """What is wrong with ``file://x.py[:fn]`` / ``file://x.js[:fn]`` as written, or None. Runs none
    of its code: a Python file is parsed for a top-level ``def`` (or class) of that name (any valid
    file is fine when ``python_default`` is empty and no function is named: it runs as a script)."""
    if is_python_file(ref):
        target = python_file_target(ref, config_dir, python_default)
        path = Path(target.path)
        if not path.is_file():
            return f"file {target.shown} was not found (looked in {path.parent})"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=target.shown)
        except (SyntaxError, UnicodeDecodeError, ValueError) as error:
            return f"{target.shown} is not valid Python: {error}"
        defined = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        if target.function and target.function.split(".")[0] not in defined:
            return f"{target.shown} defines no function {target.function!r}"
        return None
    try:
        source = file_source(ref, config_dir)
    except JsFileProblem as error:
        return str(error)
    return source.problems[0] if source.problems else syntax_problem(source)


async def call_prompt_function(
    ref: str, context: Mapping[str, Any], *, config_dir: Path | None, timeout_s: float
) -> str | list[dict[str, Any]]:
    """The prompt ``ref`` returns for ``context``; raises PromptFunctionFailed."""
    try:
        if is_python_file(ref):
            value = await _python(ref, dict(context), config_dir, timeout_s)
        else:
            value = await _javascript(ref, dict(context), config_dir, timeout_s)
    except (TimedOut, JsFailed, JsFileProblem, WorkerLost) as error:
        raise PromptFunctionFailed(str(error) or type(error).__name__) from None
    return _as_prompt(value)


async def _python(ref: str, context: dict[str, Any], config_dir: Path | None, timeout_s: float) -> Any:
    target = python_file_target(ref, config_dir, _WHOLE_SCRIPT)
    if target.function == _WHOLE_SCRIPT:
        return await _python_script(target.path, context, config_dir, timeout_s)
    outcome = await call_python(target, (context,), timeout_s=timeout_s)
    if isinstance(outcome, LoadProblem):
        raise PromptFunctionFailed(outcome.text)
    if isinstance(outcome, Raised):
        raise PromptFunctionFailed(f"raised {outcome.describe()}")
    return outcome.value


async def _python_script(
    path: str, context: dict[str, Any], config_dir: Path | None, timeout_s: float
) -> str:
    argv = [sys.executable, path, json.dumps(context, ensure_ascii=False, default=str)]
    try:
        finished = await run_program(argv, cwd=str(config_dir) if config_dir else None, timeout_s=timeout_s)
    except OSError as error:
        raise PromptFunctionFailed(f"cannot start Python: {error.strerror or error}") from None
    if finished.returncode != 0:
        err = finished.stderr.decode("utf-8", "replace").strip()
        raise PromptFunctionFailed(
            f"exited with code {finished.returncode}" + (f": {err[-500:]}" if err else "")
        )
    text = finished.stdout.decode("utf-8", "replace")
    return text.removesuffix("\n").removesuffix("\r")


async def _javascript(ref: str, context: dict[str, Any], config_dir: Path | None, timeout_s: float) -> Any:
    outcome = await call_javascript(file_source(ref, config_dir), (context,), timeout_s=timeout_s)
    if isinstance(outcome, JsThrown):
        raise PromptFunctionFailed(f"threw {outcome.message}")
    if outcome.type_name in ("undefined", "function", "symbol", "bigint"):
        raise PromptFunctionFailed(f"returned {outcome.type_name} (did the code forget to return?)")
    return outcome.value


def _as_prompt(value: Any) -> str | list[dict[str, Any]]:
    if isinstance(value, Mapping) and "prompt" in value:
        value = value["prompt"]
    if isinstance(value, str):
        return value
    if _is_messages(value):
        return [dict(message) for message in value]
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False)
    raise PromptFunctionFailed(f"must return a string or chat messages, got {type(value).__name__}")


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, Mapping) and isinstance(item.get("role"), str) for item in value)
    )
