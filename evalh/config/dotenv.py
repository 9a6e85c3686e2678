"""``.env`` files, read as dotenv reads them: ``KEY=VALUE`` lines for the run's environment.

``evalh run`` loads ``.env`` from the current directory when there is one (values already in the
environment win, as with dotenv), and every ``--env-file`` (later files win, and they win over the
environment, as promptfoo's ``--env-file`` does). The values are data: they reach templates only as
``{{ env.NAME }}`` values, never as template text, and secret-named ones are registered with
evalh.secrets so no report, log or error shows them.

Syntax (dotenv's): blank lines and ``# comments``; an optional ``export`` before the key; a value
unquoted (trimmed; `` #`` starts a comment), in single quotes (literal), or in double quotes (``\\n``,
``\\t``, ``\\"`` and ``\\\\`` escapes, and it may span lines). A line that is none of these is a located
warning, and is skipped as dotenv skips it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from evalh.common.environment import getenv, overlaid
from evalh.common.notices import warn
from evalh.config.locate import display_path, read_text_file
from evalh.errors import ConfigError, ConfigFileError
from evalh.secrets import register_config

__all__ = ["DEFAULT_ENV_FILE", "dotenv_environment", "environment_overlay", "parse_dotenv"]

DEFAULT_ENV_FILE = ".env"
_LINE = re.compile(r"\A[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def parse_dotenv(text: str, file: str) -> dict[str, str]:
    """The variables of a dotenv text; a malformed line is warned about (``file:line``) and skipped."""
    values: dict[str, str] = {}
    position, line = 0, 1
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        current = text[position:end]
        stripped = current.strip()
        if not stripped or stripped.startswith("#"):
            position, line = end + 1, line + 1
            continue
        match = _LINE.match(current)
        if match is None:
            _malformed(file, line)
            position, line = end + 1, line + 1
            continue
        value, consumed = _value(text, position + match.end())
        _refuse_nul(text, position, consumed, file, line)
        values[match.group(1)] = value
        line += text.count("\n", position, consumed) + 1
        position = consumed + 1
    return values


def _value(text: str, start: int) -> tuple[str, int]:
    """The value starting at ``start`` and the index of the newline (or end) after it."""
    quote = text[start : start + 1]
    if quote in ("'", '"'):
        close = _closing(text, start + 1, quote)
        if close >= 0:
            raw = text[start + 1 : close]
            end = text.find("\n", close)
            value = _unescape(raw) if quote == '"' else raw
            return value, len(text) if end < 0 else end
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    value = text[start:end]
    comment = re.search(r"[ \t]#", value)
    return (value[: comment.start()] if comment else value).strip(), end


def _closing(text: str, start: int, quote: str) -> int:
    index = start
    while index < len(text):
        char = text[index]
        if char == "\\" and quote == '"':
            index += 2
            continue
        if char == quote:
            return index
        index += 1
    return -1


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), raw)


def _refuse_nul(text: str, start: int, end: int, file: str, line: int) -> None:
    """A NUL in a value cannot enter the environment (the operating system ends strings at it): a located
    error rather than a crash when the run sets it."""
    nul = text.find("\0", start, end)
    if nul >= 0:
        row = line + text.count("\n", start, nul)
        column = nul - (text.rfind("\n", 0, nul) + 1) + 1
        raise ConfigError(
            "the value holds a NUL character, which no environment variable can",
            where=f"{file}:{row}:{column}",
            hint="Remove the NUL byte (the file may be binary, or saved as UTF-16: save it as UTF-8 text)",
        )


def _malformed(file: str, line: int) -> None:
    error = ConfigError(
        "not a KEY=VALUE line, skipped", where=f"{file}:{line}", hint="Write NAME=value (or # for a comment)"
    )
    warn(error, where=f"{file}:{line}", subject="malformed")


def _read(path: Path) -> dict[str, str]:
    shown = display_path(path)
    try:
        text = read_text_file(path, "--env-file")
    except FileNotFoundError:
        raise ConfigFileError(f"env file not found: {shown}", where="--env-file") from None
    return parse_dotenv(text, shown)


@contextmanager
def dotenv_environment(
    env_files: Sequence[Path], *, directory: Path | None = None
) -> Iterator[dict[str, str]]:
    """Within the block, the run's environment (:mod:`evalh.common.environment`, never ``os.environ``)
    has ``.env`` (of ``directory``, default the current one) under the process environment and every
    ``env_files`` over it. Yields what was loaded."""
    loaded: dict[str, str] = {}
    default = (directory or Path.cwd()) / DEFAULT_ENV_FILE
    if not env_files and default.is_file():
        loaded.update({k: v for k, v in _read(default).items() if getenv(k) is None})
    for path in env_files:
        loaded.update(_read(path))
    register_config(loaded)  # secret-named values are redacted from here on
    with overlaid(loaded):
        yield loaded


def environment_overlay(values: Mapping[str, str]) -> AbstractContextManager[None]:
    """Within the block, the run's environment has ``values`` over it (a config's ``env:`` map, which
    providers read during the run)."""
    return overlaid(values)
