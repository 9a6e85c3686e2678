"""What one prompt file holds, by its extension, as promptfoo's processors read it
(``src/prompts/processors/*.ts``):

* ``.txt``: prompts separated by a ``---`` line (``PROMPTFOO_PROMPT_SEPARATOR`` names another), trimmed;
  each labelled ``<file>: <its whole text>``, as promptfoo labels them.
* ``.json``: parsed when it is JSON (a ``file://`` string inside is replaced by that file: text, or
  the data of a .json / .yaml file); a file that is not (a template with ``{{n}}`` outside quotes) is
  kept as text and rendered as a text template.
* ``.yaml`` / ``.yml``: any value, its ``file://`` strings replaced as in a .json file. A string is a
  template, a chat message list stays chat messages, anything else (a list of prompts too: promptfoo
  sends it as one prompt) is sent as its JSON, each string inside rendered (see
  evalh.templating.render_prompt).
* ``.jsonl``: one prompt per non-empty line (JSON text).
* ``.csv``: one prompt per row of the ``prompt`` column (``label`` optional); a file without the
  delimiter is one prompt per line (a first line ``prompt`` is a header).
* ``.md`` / ``.j2`` and other text files: the whole text, one prompt.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh.common.environment import getenv
from evalh.config.files import LoadContext, is_file_ref
from evalh.errors import ConfigError, Where, then

__all__ = ["FilePrompt", "PromptRaw", "as_raw", "prompt_label", "read_prompt_file"]

PromptRaw = str | tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class FilePrompt:
    """One prompt of a file: its label when the config gives none, and the label the file itself
    names (a CSV ``label`` cell), which wins over the config's."""

    raw: PromptRaw
    label: str
    own_label: str | None = None


def prompt_label(raw: PromptRaw) -> str:
    """promptfoo's label for an inline prompt: its whole text, as written (``processString``: label ??
    raw; a chat list as ``JSON.stringify`` writes it). It is data (reports pair columns by it, a test's
    ``prompts:`` names it), so it is never shortened here; displays shorten it themselves."""
    if isinstance(raw, str):
        return raw
    return json.dumps([dict(m) for m in raw], ensure_ascii=False, separators=(",", ":"))


def read_prompt_file(path: Path, where: Where, ctx: LoadContext) -> list[FilePrompt]:
    """Each prompt in one file; its text stays a template, rendered once per test."""
    shown = ctx.relative(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        inside = then(where, f" ({shown})")
        data = _with_files(ctx.read_document(path, where).data, inside, ctx)
        return [FilePrompt(_from_data(data, inside), shown)]
    text = ctx.read_text(path, where)
    if suffix == ".json":
        return [FilePrompt(_from_json_text(path, text, where, ctx), shown)]
    if suffix == ".csv":
        return _nonempty(_csv_prompts(text), shown, where)
    if suffix in (".txt", ".jsonl"):
        parts = _txt_prompts(text) if suffix == ".txt" else [ln for ln in text.splitlines() if ln.strip()]
        parts = _nonempty(parts, shown, where)
        if len(parts) == 1 and suffix == ".jsonl":
            return [FilePrompt(parts[0], shown)]
        return [FilePrompt(part, f"{shown}: {part}") for part in parts]  # promptfoo: `${file}: ${raw}`
    return [FilePrompt(text, shown)]  # .md, .j2 and other text: the file as written, as promptfoo has it


def _nonempty(items: list[Any], shown: str, where: Where) -> list[Any]:
    if not items:
        raise ConfigError(f"{shown} holds no prompt", where=where, hint="Write the prompt text in the file")
    return items


def _txt_prompts(text: str) -> list[str]:
    separator = getenv("PROMPTFOO_PROMPT_SEPARATOR") or "---"
    parts = re.split(rf"^[ \t]*{re.escape(separator)}[ \t]*\r?$", text, flags=re.MULTILINE)
    return [part.strip() for part in parts if part.strip()]


def _from_json_text(path: Path, text: str, where: Where, ctx: LoadContext) -> PromptRaw:
    """A JSON prompt file's data, its ``file://`` strings replaced by what they name (promptfoo
    resolves them in .json prompts: a chat's system message kept in a .txt); a file that is not JSON is
    a text template (promptfoo keeps it)."""
    try:
        data = ctx.read_document(path, where).data
    except ConfigError:
        return text
    inside = then(where, f" ({ctx.relative(path)})")
    return _from_data(_with_files(data, inside, ctx), inside)


def _with_files(value: Any, where: Where, ctx: LoadContext) -> Any:
    """``value`` with each ``file://`` string replaced by what it names (paths from the config's
    directory, as promptfoo's ``maybeLoadConfigFromExternalFile`` resolves them)."""
    if is_file_ref(value):
        target = ctx.expand(value, where)[0]
        if target.suffix.lower() in (".json", ".yaml", ".yml"):
            return ctx.read_document(target, where).data
        return ctx.read_text(target, where)
    if isinstance(value, dict):
        return {key: _with_files(item, where, ctx) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_files(item, where, ctx) for item in value]
    return value


def _from_data(data: Any, where: Where) -> PromptRaw:
    """A parsed YAML/JSON prompt: a string template, chat messages, or any other value as JSON text."""
    if data is None:
        raise ConfigError("the prompt file is empty", where=where, hint="Write the prompt in the file")
    if isinstance(data, str):
        return data
    if _is_chat(data):
        return as_raw(data, where)
    return json.dumps(data, ensure_ascii=False)


def _is_chat(data: Any) -> bool:
    items = [data] if isinstance(data, dict) else data
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(item, dict) and "role" in item for item in items)
    )


def as_raw(raw: Any, where: Where) -> PromptRaw:
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


def _csv_prompts(text: str) -> list[FilePrompt]:
    """One prompt per row: promptfoo's ``prompt`` / ``label`` columns, trimmed; a file without the
    delimiter, or one that does not parse, is one prompt per line. Quotes are read leniently as
    promptfoo reads them (``"Facts" ,`` is the cell ``Facts``) unless ``PROMPTFOO_CSV_STRICT`` is set."""
    text = text.removeprefix("\ufeff")
    delimiter = getenv("PROMPTFOO_CSV_DELIMITER") or ","
    if delimiter not in text:
        return _csv_lines(text)
    strict = getenv("PROMPTFOO_CSV_STRICT", "").strip().lower() in ("1", "true", "yes", "on")
    try:
        reader = csv.DictReader(
            io.StringIO(text), delimiter=delimiter[0], strict=strict, skipinitialspace=not strict
        )
        rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]
    except csv.Error:
        return _csv_lines(text)
    prompts = [row for row in rows if row.get("prompt")]
    return [
        FilePrompt(row["prompt"], f"Prompt {index} - {row['prompt']}", row.get("label") or None)
        for index, row in enumerate(prompts, start=1)
    ]


def _csv_lines(text: str) -> list[FilePrompt]:
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and lines[0].strip().lower() == "prompt":
        lines = lines[1:]
    return [FilePrompt(line, f"Prompt {index} - {line}") for index, line in enumerate(lines, start=1)]
