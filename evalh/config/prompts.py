"""``prompts:`` as promptfoo reads them (``src/prompts/index.ts``, ``src/prompts/utils.ts``).

A string entry is, in promptfoo's order: an ``exec:`` program that prints the prompt; a prompt fetched
from a service (``portkey://``, ``langfuse://``, ``helicone://``: refused, each row an ERROR); a file
when it looks like a path (``file://``, a known extension, a ``.`` three or four characters from the
end, a ``/``, ``\\`` or ``*``; never when it holds a newline); else the template itself. A path-looking
glob that matches nothing is the template (promptfoo's fallback: ``What is 1/2?`` or ``a/b: {{x}}``);
a path-looking string naming no file is a located error, as promptfoo fails on it, never silently
text. A file is read by its extension (evalh.config.prompt_files); ``file://x.py:fn`` / ``.js`` are
prompt functions, programs (``.sh``, ``.rb``, an executable file...) ``exec:`` prompts, and globs work
for all of them (``file://prompts/*.py:fn``).

Labels follow promptfoo: an inline prompt is labelled with its text (shortened), a prompt file with its
path (``path: text`` when a file holds several prompts), unless a ``label`` is given. ``config`` (an
object entry's) goes with every prompt the entry makes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalh.common.deadlines import timeout_problem
from evalh.common.notices import is_strict, warn
from evalh.config.files import FILE_PREFIX, LoadContext
from evalh.config.locate import Document, JsonPath, format_path
from evalh.config.prompt_files import PromptRaw, as_raw, prompt_label, read_prompt_file
from evalh.config.tools import load_tool_files
from evalh.errors import ConfigError, TemplateSyntaxProblem, Where, then
from evalh.model import Prompt
from evalh.runtimes.prompt_functions import (
    EXEC_PREFIX,
    PROMPT_FUNCTION_SUFFIXES,
    REMOTE_PROMPT_SOURCES,
    exec_prompt_problem,
    prompt_function_problem,
    remote_prompt_refusal,
)
from evalh.templating import EnvVars, missing_env, prompt_texts

__all__ = ["load_prompts", "looks_like_path", "prompt_label"]

# promptfoo's VALID_FILE_EXTENSIONS: a string ending in one of them is a path
_PATH_SUFFIXES = (
    ".cjs",
    ".cts",
    ".js",
    ".json",
    ".jsonl",
    ".mjs",
    ".mts",
    ".py",
    ".ts",
    ".txt",
    ".yml",
    ".yaml",
)
_PATTERN_CHARS = frozenset("*?{}[]")  # promptfoo's glob test
_GLOB_CHARS = frozenset("*?[")  # what Python's glob expands
# files promptfoo runs as programs that print the prompt (src/prompts/index.ts)
_PROGRAM_SUFFIXES = (".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".rb", ".pl")
_UNSUPPORTED_CODE = (".go",)
_TEXT_SUFFIXES = (".txt", ".json", ".jsonl", ".yaml", ".yml", ".csv", ".md", ".j2")


@dataclass(frozen=True)
class _Entry:
    """One entry of ``prompts:`` as written: the text to resolve, and what the entry adds."""

    text: str
    label: str | None = None
    id: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


def _prompt_id(raw: PromptRaw) -> str:
    text = raw if isinstance(raw, str) else json.dumps([dict(m) for m in raw], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def looks_like_path(text: str) -> bool:
    """promptfoo's ``maybeFilePath``: whether a prompt string names a file rather than being one."""
    if "\n" in text or any(prefix in text for prefix in REMOTE_PROMPT_SOURCES):
        return False
    tokens = text.split(":")  # file.py:function
    return (
        text.startswith(FILE_PREFIX)
        or any(token.endswith(_PATH_SUFFIXES) for token in tokens[-2:])
        or text[-3:-2] == "."
        or text[-4:-3] == "."
        or any(char in text for char in "*/\\")
    )


def load_prompts(value: Any, doc: Document, ctx: LoadContext, env: EnvVars) -> list[Prompt]:
    """Every prompt of the config, in order (``env``: what their templates will see); problems go to
    ``ctx.problems``."""
    items: list[tuple[Any, JsonPath]] = (
        [(item, ("prompts", i)) for i, item in enumerate(value)]
        if isinstance(value, list)
        else [(value, ("prompts",))]
    )
    prompts: list[Prompt] = []
    for item, path in items:
        where = doc.place(path)
        try:
            found = _load_item(item, path, where, ctx)
        except ConfigError as error:
            ctx.problems.add_exception(error)
            continue
        for prompt in found:
            prompt = _check_syntax(prompt, where, ctx, env)
            ctx.where_of[id(prompt)] = where
            prompts.append(prompt)
    return prompts


def _load_item(item: Any, path: JsonPath, where: Where, ctx: LoadContext) -> list[Prompt]:
    shown = format_path(path)
    if isinstance(item, str):
        return _resolve(_Entry(item), shown, where, ctx)
    config = load_tool_files(item.get("config") or {}, then(where, ".config"), ctx)
    entry = _Entry(item.get("raw", item.get("id")), item.get("label"), item.get("id"), config)
    raw_text = item.get("raw")
    # promptfoo reads raw as it reads a string entry; evalh keeps raw text as the prompt itself (never a
    # guessed bare path), but file:// and exec: say what they are
    if isinstance(raw_text, str) and raw_text.startswith((FILE_PREFIX, EXEC_PREFIX)):
        return _resolve(entry, shown, where, ctx)
    if "raw" in item:  # the prompt itself, never a path
        raw = as_raw(item["raw"], where)
        return [_made(raw, entry, entry.label or prompt_label(raw), shown, own_id=True)]
    return _resolve(entry, shown, where, ctx)


def _made(raw: PromptRaw, entry: _Entry, label: str, shown: str, *, own_id: bool = False) -> Prompt:
    prompt_id = (entry.id if own_id else None) or _prompt_id(raw)
    return Prompt(raw=raw, label=label, id=prompt_id, path=shown, config=dict(entry.config))


def _resolve(entry: _Entry, shown: str, where: Where, ctx: LoadContext) -> list[Prompt]:
    text = entry.text
    if text.startswith(EXEC_PREFIX):
        return [_exec_prompt(text, entry, shown, where, ctx)]
    if remote_prompt_refusal(text) is not None:
        return [_remote_prompt(text, entry, shown, where)]
    if not looks_like_path(text):
        return [_made(text, entry, entry.label or prompt_label(text), shown, own_id=True)]
    target, function = _split_function(text.removeprefix(FILE_PREFIX))
    if _PATTERN_CHARS.intersection(target):
        return _from_glob(entry, target, function, shown, where, ctx)
    path = ctx.resolve(target, where)
    if not path.exists() and target.lower().endswith(PROMPT_FUNCTION_SUFFIXES):
        ref = FILE_PREFIX + target + (f":{function}" if function else "")
        return [_function_prompt(ref, entry, entry.label, shown, where, ctx)]  # it says what is missing
    if not path.exists():
        raise _missing(entry, path, where, ctx)
    return _from_file(path, function, entry, entry.label, shown, where, ctx)


def _split_function(target: str) -> tuple[str, str | None]:
    """``x.py:fn`` -> (``x.py``, ``fn``); a colon after any other path is part of the path."""
    head, sep, tail = target.rpartition(":")
    if sep and head.lower().endswith(PROMPT_FUNCTION_SUFFIXES) and tail:
        return head, tail
    return target, None


def _missing(entry: _Entry, path: Path, where: Where, ctx: LoadContext) -> ConfigError:
    if entry.text.startswith(FILE_PREFIX):
        return ctx.missing(path, where)
    return ConfigError(
        f"the prompt {entry.text!r} looks like a file path, but {ctx.relative(path)} does not exist",
        where=where,
        hint="promptfoo reads a prompt with a '/', '\\', '*' or a file extension as a path too. If it "
        "is the prompt's text, write it as {raw: '...'}; if it is a file, check the path (relative to "
        "the config)",
    )


def _from_glob(
    entry: _Entry, target: str, function: str | None, shown: str, where: Where, ctx: LoadContext
) -> list[Prompt]:
    """Every file the glob matches, labelled ``label: path`` when a label is given; a path-looking
    pattern matching nothing is the prompt's text (promptfoo's fallback), a ``file://`` one an error."""
    matches: list[Path] = []
    if _GLOB_CHARS.intersection(target):
        try:
            matches = ctx.expand(target, where)
        except ConfigError:
            if entry.text.startswith(FILE_PREFIX):
                raise
    if not matches:
        if entry.text.startswith(FILE_PREFIX):
            raise ctx.missing(ctx.resolve(target, where), where)
        if not re.search(r"\s|\{\{|\{%", entry.text):  # a bare pattern, not a sentence or a template
            unmatched = ConfigError(
                f"no file matches the prompt {entry.text!r}, so it is the prompt's text (as in promptfoo)",
                where=where,
                hint="Check the pattern (paths are relative to the config), or write text as {raw: '...'}",
            )
            warn(unmatched, where=where, subject="unmatched prompt glob")
        return [_made(entry.text, entry, entry.label or prompt_label(entry.text), shown, own_id=True)]
    prompts: list[Prompt] = []
    for path in matches:
        relative = ctx.relative(path)
        label = f"{entry.label}: {relative}" if entry.label else None
        found = _from_file(path, function, entry, label, shown, where, ctx)
        prompts.extend(replace(p, id=f"{entry.id}:{relative}") if entry.id else p for p in found)
    return prompts


def _from_file(
    path: Path,
    function: str | None,
    entry: _Entry,
    label: str | None,
    shown: str,
    where: Where,
    ctx: LoadContext,
) -> list[Prompt]:
    relative = ctx.relative(path)
    suffix = path.suffix.lower()
    if path.is_dir():
        raise ConfigError(
            f"{relative} is a directory",
            where=where,
            hint=f"Name the files with a glob, e.g. file://{relative.rstrip('/')}/*.txt",
        )
    if suffix in PROMPT_FUNCTION_SUFFIXES:
        ref = f"{FILE_PREFIX}{relative}" + (f":{function}" if function else "")
        return [_function_prompt(ref, entry, label, shown, where, ctx)]
    if suffix in _PROGRAM_SUFFIXES or (suffix not in _TEXT_SUFFIXES and os.access(path, os.X_OK)):
        command = f"{EXEC_PREFIX}{shlex.quote(str(path))}"
        return [_exec_prompt(command, replace(entry, label=label or relative), shown, where, ctx)]
    if suffix in _UNSUPPORTED_CODE:
        raise ConfigError(
            f"{relative} is a script evalh cannot run as a prompt function",
            where=where,
            hint="Prompt functions are .py files or JavaScript/TypeScript files (.js, .cjs, .mjs, .ts, "
            ".mts, .cts); or write the prompt as a .txt template or a .json/.yaml chat message list",
        )
    prompts = []
    for part in read_prompt_file(path, where, ctx):
        if part.own_label:
            name = part.own_label
        elif label and part.label != relative:
            name = f"{label}: {part.label}"
        else:
            name = label or part.label
        prompts.append(_made(part.raw, entry, name, shown))
    return prompts


def _function_prompt(
    ref: str, entry: _Entry, label: str | None, shown: str, where: Where, ctx: LoadContext
) -> Prompt:
    """A prompt function: checked now (file, syntax, the function's name), called per row by the run."""
    problem = prompt_function_problem(ref, ctx.base_dir)
    if problem is not None:
        raise ConfigError(
            problem,
            where=where,
            hint="Name a function of the file: file://prompt.py:make_prompt (Python, default get_prompt) "
            "or file://prompt.js[:fn] (JavaScript, default module.exports)",
        )
    return Prompt(
        raw="",
        label=label or ref.removeprefix(FILE_PREFIX),
        id=entry.id or _prompt_id(ref),
        path=shown,
        function=ref,
        config=dict(entry.config),
    )


def _exec_prompt(command: str, entry: _Entry, shown: str, where: Where, ctx: LoadContext) -> Prompt:
    """``exec:<command line>``: checked now (the program exists), run per row by the run."""
    problem = exec_prompt_problem(command, ctx.base_dir) or timeout_problem(entry.config)
    if problem is not None:
        raise ConfigError(
            problem,
            where=where,
            hint="exec: runs a program (no shell) that prints the prompt, e.g. exec:./make_prompt.sh; "
            "paths are relative to the config",
        )
    return Prompt(
        raw="",
        label=entry.label or command.removeprefix(EXEC_PREFIX),
        id=entry.id or _prompt_id(command),
        path=shown,
        function=command,
        config=dict(entry.config),
    )


def _remote_prompt(text: str, entry: _Entry, shown: str, where: Where) -> Prompt:
    """A prompt promptfoo fetches from a service: a located warning (an error with --strict), and its
    rows are ERROR rows, so the suite's other prompts still run."""
    refusal = remote_prompt_refusal(text) or ""
    hint = (
        "Copy the prompt into the config (or a file:// prompt file); without --strict its rows are ERROR rows"
    )
    warn(ConfigError(refusal, where=where, hint=hint), where=where, subject="remote prompt")
    return Prompt(
        raw="",
        label=entry.label or text,
        id=entry.id or _prompt_id(text),
        path=shown,
        function=text,
        config=dict(entry.config),
    )


_ENV_NOT_SET = re.compile(r"environment variable '[^']+' is not set")  # the render's warning subject


def _check_syntax(prompt: Prompt, where: Where, ctx: LoadContext, env: EnvVars) -> Prompt:
    """Syntax errors, templates the sandbox refuses and unset ``env.NAME`` are found now, not when
    the first provider call is due. A template that cannot render is a warning and makes the prompt
    unusable (its rows are ERRORs, the other prompts run, as in promptfoo); --strict makes it an error."""
    for text in prompt_texts(prompt.raw):
        try:
            unset = missing_env(text, env, where=where)
        except ConfigError as error:
            if is_strict() or not isinstance(error, TemplateSyntaxProblem):  # a refused template: never
                ctx.problems.add_exception(error)
                return prompt
            warn(error, where=where, subject="template cannot render")
            return replace(prompt, unusable=error.render())
        if unset is not None and is_strict():
            ctx.problems.add_exception(unset)
            return prompt
        if unset is not None:  # renders empty, as in promptfoo: warned once (the render's key)
            subject = _ENV_NOT_SET.search(str(unset))
            warn(unset, where=prompt.path or where, subject=subject.group(0) if subject else str(unset))
    return prompt
