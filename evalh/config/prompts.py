"""``prompts:``: inline templates, ``file://`` text files (split on ``---`` lines), chat message lists.

Labels follow promptfoo: an inline prompt is labelled with its text (shortened), a prompt file with its
path (``path: text`` when a .txt file holds several prompts), unless a ``label`` is given.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.config.files import DATA_SUFFIXES, SCRIPT_SUFFIXES, LoadContext, is_file_ref
from evalh.config.locate import Document, JsonPath, format_path
from evalh.errors import ConfigError
from evalh.model import Prompt
from evalh.notices import is_strict, warn
from evalh.runtimes.prompt_functions import PROMPT_FUNCTION_SUFFIXES, prompt_function_problem
from evalh.templating import EnvVars, missing_env, template_strings

__all__ = ["LABEL_LIMIT", "load_prompts", "prompt_label"]

LABEL_LIMIT = 60
_SEPARATOR = re.compile(r"^\s*---\s*$", re.MULTILINE)
PromptRaw = str | tuple[Mapping[str, Any], ...]


def prompt_label(raw: PromptRaw) -> str:
    """promptfoo's label for an inline prompt: its text, on one line, shortened."""
    text = raw if isinstance(raw, str) else json.dumps([dict(m) for m in raw], ensure_ascii=False)
    flat = " ".join(text.split())
    return flat if len(flat) <= LABEL_LIMIT else flat[: LABEL_LIMIT - 3] + "..."


def _prompt_id(raw: PromptRaw) -> str:
    text = raw if isinstance(raw, str) else json.dumps([dict(m) for m in raw], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
        where = doc.where(path)
        try:
            found = _load_item(item, path, where, ctx)
        except ConfigError as error:
            ctx.problems.add_exception(error)
            continue
        for prompt in found:
            ctx.where_of[id(prompt)] = where
            _check_syntax(prompt, where, ctx, env)
        prompts.extend(found)
    return prompts


def _load_item(item: Any, path: JsonPath, where: str, ctx: LoadContext) -> list[Prompt]:
    shown = format_path(path)
    if isinstance(item, str):
        if is_file_ref(item):
            return _from_files(item, None, shown, where, ctx)
        return [Prompt(raw=item, label=prompt_label(item), id=_prompt_id(item), path=shown)]
    label = item.get("label")
    if "raw" in item:
        raw = _as_raw(item["raw"], where)
        return [
            Prompt(
                raw=raw, label=label or prompt_label(raw), id=item.get("id") or _prompt_id(raw), path=shown
            )
        ]
    ref = item["id"]
    if is_file_ref(ref):
        return _from_files(ref, label, shown, where, ctx)
    return [Prompt(raw=ref, label=label or prompt_label(ref), id=_prompt_id(ref), path=shown)]


def _function_target(ref: str) -> str | None:
    """The file of a prompt function reference (``file://x.py:fn``, ``x.js``), or None."""
    target = ref.removeprefix("file://")
    path, sep, function = target.rpartition(":")
    name = path if sep and all(part.isidentifier() for part in function.split(".")) else target
    return name if name.lower().endswith(PROMPT_FUNCTION_SUFFIXES) else None


def _function_prompt(ref: str, label: str | None, shown: str, where: str, ctx: LoadContext) -> Prompt:
    """A prompt function: checked now (file, syntax, the function's name), called per row by the run."""
    problem = prompt_function_problem(ref, ctx.base_dir)
    if problem is not None:
        raise ConfigError(
            problem,
            where=where,
            hint="Name a function of the file: file://prompt.py:make_prompt (Python, default get_prompt) "
            "or file://prompt.js[:fn] (JavaScript, default module.exports)",
        )
    written = ref if ref.startswith("file://") else f"file://{ref}"
    return Prompt(
        raw="",
        label=label or written.removeprefix("file://"),
        id=_prompt_id(written),
        path=shown,
        function=written,
    )


def _from_files(ref: str, label: str | None, shown: str, where: str, ctx: LoadContext) -> list[Prompt]:
    if _function_target(ref) is not None:
        return [_function_prompt(ref, label, shown, where, ctx)]
    prompts: list[Prompt] = []
    for path in ctx.expand(ref, where):
        for raw, part_label in _read_prompt_file(path, where, ctx):
            name = f"{label}: {part_label}" if label and part_label != ctx.relative(path) else label
            prompts.append(Prompt(raw=raw, label=name or part_label, id=_prompt_id(raw), path=shown))
    return prompts


def _read_prompt_file(path: Path, where: str, ctx: LoadContext) -> list[tuple[PromptRaw, str]]:
    """(raw, label) for each prompt in one file; its text stays a template, rendered once per test
    (``env`` included) when the run is planned."""
    shown = ctx.relative(path)
    suffix = path.suffix.lower()
    if suffix in SCRIPT_SUFFIXES:
        raise ConfigError(
            f"{shown} is a script evalh cannot run as a prompt function",
            where=where,
            hint="Prompt functions are .py or .js/.cjs files; or write the prompt as a .txt template "
            "or a .json/.yaml chat message list",
        )
    if suffix in DATA_SUFFIXES:
        data = ctx.read_document(path, where).data
        if isinstance(data, str):
            return [(data, shown)]
        return [(_as_raw(data, f"{where} ({shown})"), shown)]
    text = ctx.read_text(path, where)
    if suffix != ".txt":
        return [(text.strip(), shown)]
    parts = [part.strip() for part in _SEPARATOR.split(text)]
    parts = [part for part in parts if part]
    if not parts:
        raise ConfigError(f"{shown} holds no prompt", where=where, hint="Write the prompt text in the file")
    if len(parts) == 1:
        return [(parts[0], shown)]
    return [(part, f"{shown}: {prompt_label(part)}") for part in parts]


def _as_raw(raw: Any, where: str) -> PromptRaw:
    """A template string, or a validated chat message list."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and "role" in raw:
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            "a prompt must be a template string or a list of chat messages",
            where=where,
            hint="Write messages as [{role: system, content: ...}, {role: user, content: ...}]",
        )
    for index, message in enumerate(raw):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or "content" not in message
        ):
            raise ConfigError(
                f"chat message {index + 1} must be a mapping with a 'role' and a 'content'",
                where=where,
                hint="e.g. {role: user, content: 'Answer: {{question}}'}",
            )
    return tuple(raw)


_ENV_NOT_SET = re.compile(r"environment variable '[^']+' is not set")  # the render's warning subject


def _check_syntax(prompt: Prompt, where: str, ctx: LoadContext, env: EnvVars) -> None:
    """Syntax errors, templates the sandbox refuses and unset ``env.NAME`` are found now, not when
    the first provider call is due."""
    texts = [prompt.raw] if isinstance(prompt.raw, str) else template_strings(list(prompt.raw))
    for text in texts:
        try:
            unset = missing_env(text, env, where=where)
        except ConfigError as error:
            ctx.problems.add_exception(error)
            return
        if unset is not None and is_strict():
            ctx.problems.add_exception(unset)
            return
        if unset is not None:  # renders empty, as in promptfoo: warned once (the render's key)
            subject = _ENV_NOT_SET.search(str(unset))
            warn(unset, where=prompt.path or where, subject=subject.group(0) if subject else str(unset))
