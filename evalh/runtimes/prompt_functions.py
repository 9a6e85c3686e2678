"""promptfoo's prompt functions (``src/prompts/processors/{python,javascript}.ts``): a prompt that is
``file://prompt.py:fn`` or ``file://prompt.js[:fn]`` (or ``.ts``, ``.mjs``...) is code the config author
named, called once per row with ``{vars, provider: {id, label}}``; what it returns is the prompt, not
rendered again.

A named Python function runs in the worker pool; a Python file without ``:fn`` runs as a script, as in
promptfoo: ``python prompt.py '<context as JSON>'`` in its own process group, its standard output
(less one final newline) being the prompt. JavaScript runs in quickjs-ng (``module.exports`` when no
function is named). Each has a deadline. A string is the prompt; a list
of ``{role, content}`` messages is a chat prompt; ``{prompt: ..., config: ...}`` gives its ``prompt``
(the config merged over the prompt's for that call); any other object is sent as its JSON indented by
two spaces, as promptfoo does. Anything else, a raise or a timeout is an ERROR row.

``exec:<command line>`` (and a prompt file promptfoo runs: ``.sh``, ``.rb``, an executable file...) runs
the program without a shell, in its own process group, with the JSON context ``{vars, provider,
config}`` as its last argument; its trimmed standard output is the prompt. Prompts promptfoo fetches
from a service (``portkey://``, ``langfuse://``, ``helicone://``) are refused: evalh makes no such call.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.common.deadlines import EXEC_PROMPT_TIMEOUT_S, PROMPT_FUNCTION_TIMEOUT_S, call_timeout_s
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES, JsFileProblem, file_source
from evalh.runtimes.transforms import is_python_file, python_file_target

# The runtimes (the JavaScript engine, the Python worker, subprocesses) are imported by the check or call
# of a prompt function: a config of plain prompts never loads them.

__all__ = [
    "EXEC_PREFIX",
    "PROMPT_FUNCTION_SUFFIXES",
    "REMOTE_PROMPT_SOURCES",
    "PromptFunctionFailed",
    "PromptResult",
    "call_prompt_function",
    "exec_prompt_problem",
    "prompt_function_problem",
    "prompt_timeout_s",
    "remote_prompt_refusal",
    "script_problem",
]

PROMPT_FUNCTION_SUFFIXES = (".py", *JS_FILE_SUFFIXES)
EXEC_PREFIX = "exec:"
# promptfoo fetches these from the named service when the row is rendered
REMOTE_PROMPT_SOURCES = {"portkey://": "Portkey", "langfuse://": "Langfuse", "helicone://": "Helicone"}
_WHOLE_SCRIPT = ""  # the "function" of file://x.py without :fn: the file runs as a script
_ANSI_ESCAPE = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")


class PromptFunctionFailed(Exception):
    """The prompt function gave no prompt; the message says why."""


def remote_prompt_refusal(ref: str) -> str | None:
    """Why evalh does not run a prompt promptfoo fetches from a service, or None for any other."""
    for prefix, service in REMOTE_PROMPT_SOURCES.items():
        if ref.startswith(prefix):
            return (
                f"evalh does not support {prefix} prompts: promptfoo fetches them from {service} "
                "when each row runs, and evalh makes no such call"
            )
    return None


def prompt_timeout_s(ref: str, config: Mapping[str, Any], run_timeout_s: float | None) -> float:
    """How long one call of a prompt source may take: an ``exec:`` program its prompt's
    ``config.timeout`` / ``timeoutMs`` (else the run's, else 60 s, promptfoo's default); a prompt
    function the run's ``timeoutMs``, else 10 s."""
    if ref.startswith(EXEC_PREFIX):
        return call_timeout_s(config, run_timeout_s, EXEC_PROMPT_TIMEOUT_S)
    return run_timeout_s or PROMPT_FUNCTION_TIMEOUT_S


def _exec_argv(ref: str, config_dir: Path | None) -> list[str]:
    """The argv of ``exec:<command line>`` (shell-like words, no shell). A first word naming a file
    beside the config is that file, as promptfoo resolves it against the config's directory."""
    argv = shlex.split(ref.removeprefix(EXEC_PREFIX))
    if argv and config_dir is not None and "/" not in argv[0] and (config_dir / argv[0]).is_file():
        argv[0] = str(config_dir / argv[0])
    return argv


def exec_prompt_problem(ref: str, config_dir: Path | None) -> str | None:
    """What is wrong with an ``exec:`` prompt as written (validate), or None. Runs nothing."""
    try:
        argv = _exec_argv(ref, config_dir)
    except ValueError as error:
        return f"{ref!r} is not a valid command line: {error}"
    if not argv:
        return "exec: needs a command, e.g. exec:./make_prompt.sh"
    program = argv[0]
    if "/" in program:
        path = Path(program) if config_dir is None else config_dir / program
        if not path.is_file():
            return f"program {program} was not found (looked in {path.parent})"
        return None
    return None if shutil.which(program) else f"program {program!r} was not found on PATH"


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
    from evalh.runtimes.javascript import syntax_problem

    return source.problems[0] if source.problems else syntax_problem(source)


async def call_prompt_function(
    ref: str, context: Mapping[str, Any], *, config_dir: Path | None, timeout_s: float
) -> PromptResult:
    """The prompt ``ref`` gives for ``context``; raises PromptFunctionFailed."""
    refusal = remote_prompt_refusal(ref)
    if refusal is not None:
        raise PromptFunctionFailed(refusal)
    from evalh.runtimes.javascript import JsFailed, TimedOut
    from evalh.runtimes.python import WorkerLost

    try:
        if ref.startswith(EXEC_PREFIX):
            return _from_text(await _exec(ref, dict(context), config_dir, timeout_s), {})
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
    from evalh.runtimes.python import LoadProblem, Raised, call_python

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
    from evalh.runtimes.processes import run_program

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


async def _exec(ref: str, context: dict[str, Any], config_dir: Path | None, timeout_s: float) -> str:
    """promptfoo's executable prompt: the context as the last argument, the trimmed standard output
    (terminal colour codes removed) as the prompt; it is not rendered again."""
    argv = [*_exec_argv(ref, config_dir), json.dumps(context, ensure_ascii=False, default=str)]
    from evalh.runtimes.processes import run_program

    try:
        finished = await run_program(argv, cwd=str(config_dir) if config_dir else None, timeout_s=timeout_s)
    except OSError as error:
        raise PromptFunctionFailed(f"cannot start {argv[0]!r}: {error.strerror or error}") from None
    out = _ANSI_ESCAPE.sub("", finished.stdout.decode("utf-8", "replace").strip())
    err = _ANSI_ESCAPE.sub("", finished.stderr.decode("utf-8", "replace").strip())
    if finished.returncode != 0:
        raise PromptFunctionFailed(
            f"exited with code {finished.returncode}" + (f": {err[-500:]}" if err else "")
        )
    if not out and err:
        raise PromptFunctionFailed(f"wrote only to stderr: {err[-500:]}")
    return out


async def _javascript(ref: str, context: dict[str, Any], config_dir: Path | None, timeout_s: float) -> Any:
    from evalh.runtimes.javascript import JsThrown, call_javascript

    outcome = await call_javascript(file_source(ref, config_dir), (context,), timeout_s=timeout_s)
    if isinstance(outcome, JsThrown):
        raise PromptFunctionFailed(f"threw {outcome.message}")
    if outcome.type_name in ("undefined", "function", "symbol", "bigint"):
        raise PromptFunctionFailed(f"returned {outcome.type_name} (did the code forget to return?)")
    return outcome.value


@dataclass(frozen=True)
class PromptResult:
    """What a prompt source gave for one row: the prompt, and config its ``{prompt, config}`` result
    adds over the prompt's own (promptfoo's PromptFunctionResult)."""

    prompt: str | list[dict[str, Any]]
    config: Mapping[str, Any] = field(default_factory=dict)


def _as_prompt(value: Any) -> PromptResult:
    config: Any = {}
    if isinstance(value, Mapping) and "prompt" in value:
        value, config = value["prompt"], value.get("config") or {}
        if not isinstance(config, Mapping):
            raise PromptFunctionFailed(f"returned a config that is a {type(config).__name__}, not a mapping")
    if isinstance(value, str):
        return _from_text(value, config)
    if _is_messages(value):
        return PromptResult([dict(message) for message in value], config)
    if isinstance(value, Mapping | list):  # sent as promptfoo sends it: indented JSON
        return PromptResult(json.dumps(value, ensure_ascii=False, indent=2), config)
    raise PromptFunctionFailed(f"must return a string or chat messages, got {type(value).__name__}")


def _from_text(text: str, config: Mapping[str, Any]) -> PromptResult:
    """A prompt given as text: promptfoo parses one that is a JSON object or list and sends it indented
    by two spaces (a message list is a chat prompt, as from an inline JSON prompt); other text as it is."""
    stripped = text.strip()
    if not stripped.startswith(("[", "{")):
        return PromptResult(text, config)
    try:
        parsed = json.loads(stripped)
    except ValueError:
        return PromptResult(text, config)
    if _is_messages(parsed):
        return PromptResult([dict(message) for message in parsed], config)
    return PromptResult(json.dumps(parsed, ensure_ascii=False, indent=2), config)


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, Mapping) and isinstance(item.get("role"), str) for item in value)
    )
