"""``file://`` references: resolved relative to the config file, read once, located in messages.

Also the "origins" of tests: where a test came from (the config, a YAML/JSON/JSONL file, a CSV row),
so that a problem found anywhere later can still be reported as ``file:line:col path``.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalh.config.locate import (
    Document,
    JsonPath,
    Problems,
    display_path,
    format_path,
    parse_document,
    read_text_file,
)
from evalh.config.schema import ShapeCachedValidator, test_validator
from evalh.errors import ConfigError, ConfigFileError

__all__ = [
    "DATA_SUFFIXES",
    "FILE_PREFIX",
    "SCRIPT_SUFFIXES",
    "CsvOrigin",
    "DocOrigin",
    "LoadContext",
    "Origin",
    "is_file_ref",
    "script_path",
]

FILE_PREFIX = "file://"
DATA_SUFFIXES = (".json", ".yaml", ".yml")
SCRIPT_SUFFIXES = (".py", ".js", ".ts", ".mjs", ".cjs", ".rb", ".go")
_GLOB_CHARS = ("*", "?", "[")


def is_file_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(FILE_PREFIX)


def script_path(ref: str) -> str:
    """``file://x.py:fn`` / ``x.py:fn`` -> ``x.py`` (the function name is not part of the path)."""
    text = ref.removeprefix(FILE_PREFIX)
    head, sep, tail = text.rpartition(":")
    if sep and head.endswith(".py") and tail.isidentifier():
        return head
    return text


class Origin(Protocol):
    """Where a test was written; ``locate`` maps a path inside the test to ``file:line[:col]``."""

    def locate(self, inner: JsonPath) -> str: ...


@dataclass(frozen=True)
class DocOrigin:
    """A test inside a YAML/JSON document, at ``base`` (e.g. ``("tests", 3)``)."""

    document: Document
    base: JsonPath

    def locate(self, inner: JsonPath) -> str:
        return self.document.locate((*self.base, *inner))


@dataclass(frozen=True)
class CsvOrigin:
    """A test made from one CSV row: ``file:row`` for the row, ``file:row:col`` for one cell."""

    file: str
    row: int
    columns: Mapping[JsonPath, int] = field(default_factory=dict)

    def locate(self, inner: JsonPath) -> str:
        for cut in range(len(inner), 0, -1):
            column = self.columns.get(inner[:cut])
            if column is not None:
                return f"{self.file}:{self.row}:{column}"
        return f"{self.file}:{self.row}"


@dataclass
class LoadContext:
    """State shared while loading one config: its directory, the problems found, files read."""

    config_file: Path
    problems: Problems = field(default_factory=Problems)
    test_checker: ShapeCachedValidator = field(default_factory=lambda: ShapeCachedValidator(test_validator()))
    where_of: dict[int, str] = field(default_factory=dict)  # id(spec or prompt) -> "file:line:col path"
    _texts: dict[Path, str] = field(default_factory=dict)
    _data: dict[Path, Document] = field(default_factory=dict)

    @property
    def files_read(self) -> tuple[Path, ...]:
        """Every file read through this context, in the order first read."""
        return tuple(self._texts)

    @property
    def base_dir(self) -> Path:
        return self.config_file.parent

    @property
    def display(self) -> str:
        return display_path(self.config_file)

    def resolve(self, ref: str) -> Path:
        """A ``file://`` (or bare) path, relative to the config file's directory."""
        return (self.base_dir / Path(ref.removeprefix(FILE_PREFIX)).expanduser()).resolve()

    def relative(self, path: Path) -> str:
        """A path as written in the config: relative to the config's directory when inside it."""
        try:
            return path.relative_to(self.base_dir).as_posix()
        except ValueError:
            return display_path(path)

    def expand(self, ref: str, where: str) -> list[Path]:
        """The files a reference names: one path, or the sorted matches of a glob."""
        text = ref.removeprefix(FILE_PREFIX)
        if not any(char in text for char in _GLOB_CHARS):
            path = self.resolve(ref)
            if not path.exists():
                raise self.missing(path, where)
            if path.is_dir():
                raise ConfigFileError(
                    f"{display_path(path)} is a directory",
                    where=where,
                    hint=f"Name the files with a glob, e.g. file://{text.rstrip('/')}/*.yaml",
                )
            return [path]
        pattern = str(self.base_dir / Path(text).expanduser())
        matches = sorted(Path(match).resolve() for match in glob.glob(pattern, recursive=True))
        files = [match for match in matches if match.is_file()]
        if not files:
            raise ConfigFileError(
                f"no file matches {text!r}",
                where=where,
                hint="Check the pattern; paths are relative to the config",
            )
        return files

    def missing(self, path: Path, where: str) -> ConfigFileError:
        return ConfigFileError(
            f"file not found: {display_path(path)}",
            where=where,
            hint=f"file:// paths are relative to the config file's directory ({display_path(self.base_dir)})",
        )

    def read_text(self, path: Path, where: str) -> str:
        cached = self._texts.get(path)
        if cached is not None:
            return cached
        try:
            text = read_text_file(path, where)
        except FileNotFoundError:
            raise self.missing(path, where) from None
        self._texts[path] = text
        return text

    def read_document(self, path: Path, where: str) -> Document:
        """A YAML/JSON file with positions (parsed once per load)."""
        cached = self._data.get(path)
        if cached is None:
            text = self.read_text(path, where)
            try:
                cached = parse_document(text, display_path(path))
            except ConfigError:
                if path.suffix.lower() != ".json":
                    raise
                cached = _parse_json(text, display_path(path))
            self._data[path] = cached
        return cached

    def load_value(self, ref: str, where: str, *, trim: bool) -> Any:
        """A ``file://`` value: .json/.yaml parsed, scripts refused, anything else read as text."""
        path = self.resolve(script_path(ref))
        suffix = path.suffix.lower()
        if suffix in DATA_SUFFIXES:
            return self.read_document(path, where).data
        if suffix in SCRIPT_SUFFIXES:
            raise ConfigError(
                f"{ref!r} is a script; evalh does not run scripts to produce values",
                where=where,
                hint="Use a .txt, .json or .yaml file, or a python assertion",
            )
        text = self.read_text(path, where)
        return text.strip() if trim else text

    def where(self, origin: Origin, inner: JsonPath, shown: JsonPath) -> str:
        """``file:line:col shown-path`` for a path inside a test."""
        return f"{origin.locate(inner)} {format_path(shown)}"


def _parse_json(text: str, file: str) -> Document:
    try:
        return Document(data=json.loads(text), file=file)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"invalid JSON: {error.msg}", where=f"{file}:{error.lineno}:{error.colno}"
        ) from None
