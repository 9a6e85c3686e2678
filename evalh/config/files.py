"""``file://`` references: resolved relative to the config file, read once, located in messages.

Also the "origins" of tests: where a test came from (the config, a YAML/JSON/JSONL file, a CSV row),
so that a problem found anywhere later can still be reported as ``file:line:col path``.
"""

from __future__ import annotations

import glob
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from evalh.config.locate import (
    Document,
    JsonPath,
    Problems,
    display_path,
    format_path,
    parse_document,
    path_errors,
    read_bytes_file,
    read_text_file,
)
from evalh.config.shapes import ShapeCachedValidator, defs_checker
from evalh.errors import ConfigError, ConfigFileError, Place, Where
from evalh.providers.tools import TOOL_KEYS
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES

__all__ = [
    "DATA_SUFFIXES",
    "FILE_PREFIX",
    "SCRIPT_SUFFIXES",
    "CsvOrigin",
    "DocOrigin",
    "LoadContext",
    "Origin",
    "TestSource",
    "data_file_refs",
    "is_file_ref",
    "is_glob",
    "script_path",
]

FILE_PREFIX = "file://"
DATA_SUFFIXES = (".json", ".yaml", ".yml")
SCRIPT_SUFFIXES = (".py", *JS_FILE_SUFFIXES, ".rb", ".go")
_GLOB_CHARS = ("*", "?", "[")
_PYTHON_PREFIX = "python:"


def is_file_ref(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith(FILE_PREFIX)


def is_glob(ref: str) -> bool:
    """Whether a path names files by a pattern (``*``, ``?``, ``[``)."""
    return any(char in ref for char in _GLOB_CHARS)


def script_path(ref: str) -> str:
    """``file://x.py:fn`` / ``x.js:fn`` -> ``x.py`` / ``x.js`` (the function name is not part of the path)."""
    text = ref.removeprefix(FILE_PREFIX)
    head, sep, tail = text.rpartition(":")
    if sep and head.endswith((".py", *JS_FILE_SUFFIXES)) and tail.isidentifier():
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


# A built test's source: its data as written, its path in words, its origin and defaultTest's origin.
TestSource = tuple[Mapping[str, Any], JsonPath, Origin, "Origin | None"]


@dataclass
class LoadContext:
    """State shared while loading one config: its directory, the problems found, files read."""

    config_file: Path
    problems: Problems = field(default_factory=Problems)
    test_checker: ShapeCachedValidator = field(default_factory=lambda: defs_checker("test"))
    where_of: dict[int, Where] = field(default_factory=dict)  # id(spec or prompt) -> "file:line:col path"
    test_sources: dict[int, TestSource] = field(default_factory=dict)  # id(test) -> where it was written
    allow_outside: bool = False  # evaluateOptions.allowFileOutsideConfigDir: data files may name any file
    other_configs: tuple[Path, ...] = ()  # -c b.yaml -c c.yaml merged into config_file's (inputs too)
    run_transforms: bool = False  # run options.transformVars: loading to run, not to validate
    report_config: bool = True  # make Suite.raw_config (a redacted walk of the whole config) for reports
    _texts: dict[Path, str] = field(default_factory=dict)
    _bytes: dict[Path, bytes] = field(default_factory=dict)
    _data: dict[Path, Document] = field(default_factory=dict)

    @property
    def files_read(self) -> tuple[Path, ...]:
        """Every file read through this context, text files first, each in the order first read."""
        return tuple(dict.fromkeys([*self._texts, *self._bytes]))

    @property
    def base_dir(self) -> Path:
        return self.config_file.parent

    @property
    def display(self) -> str:
        return display_path(self.config_file)

    def resolve(self, ref: str, where: Where | None = None, folder: Path | None = None) -> Path:
        """A ``file://`` (or bare) path, relative to ``folder`` (default: the config file's directory),
        links followed."""
        text = ref.removeprefix(FILE_PREFIX)
        with path_errors(text, where):
            return ((folder or self.base_dir) / Path(text).expanduser()).resolve()

    def relative(self, path: Path) -> str:
        """A path as written in the config: relative to the config's directory when inside it."""
        try:
            return path.relative_to(self.base_dir).as_posix()
        except ValueError:
            return display_path(path)

    def expand(self, ref: str, where: Where, folder: Path | None = None) -> list[Path]:
        """The files a reference names: one path, or the sorted matches of a glob (relative to
        ``folder``, default the config's directory)."""
        text = ref.removeprefix(FILE_PREFIX)
        if not is_glob(text):
            path = self.resolve(ref, where, folder)
            with path_errors(text, where):
                exists, is_dir = path.exists(), path.is_dir()
            if not exists:
                raise self.missing(path, where, folder)
            if is_dir:
                raise ConfigFileError(
                    f"{display_path(path)} is a directory",
                    where=where,
                    hint=f"Name the files with a glob, e.g. file://{text.rstrip('/')}/*.yaml",
                )
            return [path]
        files = self._glob_files(text, where, folder)
        if not files:
            raise ConfigFileError(
                f"no file matches {text!r}",
                where=where,
                hint=f"Check the pattern; {_relative_to(folder)}",
            )
        return files

    def _glob_files(self, pattern: str, where: Where | None, folder: Path | None = None) -> list[Path]:
        """The files a glob (relative to ``folder``, default the config's directory) matches, sorted,
        links followed."""
        with path_errors(pattern, where):
            absolute = str((folder or self.base_dir) / Path(pattern).expanduser())
            matches = sorted(Path(match).resolve() for match in glob.glob(absolute, recursive=True))
            return [match for match in matches if match.is_file()]

    def missing(self, path: Path, where: Where, folder: Path | None = None) -> ConfigFileError:
        return ConfigFileError(
            f"file not found: {display_path(path)}",
            where=where,
            hint=_relative_to(folder) + f" ({display_path(folder or self.base_dir)})",
        )

    def read_text(self, path: Path, where: Where) -> str:
        cached = self._texts.get(path)
        if cached is not None:
            return cached
        try:
            text = read_text_file(path, where)
        except FileNotFoundError:
            raise self.missing(path, where) from None
        self._texts[path] = text
        return text

    def read_bytes(self, path: Path, where: Where) -> bytes:
        """A binary file (an image var), read once per load."""
        cached = self._bytes.get(path)
        if cached is None:
            try:
                cached = read_bytes_file(path, where)
            except FileNotFoundError:
                raise self.missing(path, where) from None
            self._bytes[path] = cached
        return cached

    def read_document(self, path: Path, where: Where) -> Document:
        """A YAML/JSON file with positions (parsed once per load)."""
        cached = self._data.get(path)
        if cached is None:
            text = self.read_text(path, where)
            cached = parse_document(text, display_path(path), json_fallback=path.suffix.lower() == ".json")
            self._data[path] = cached
        return cached

    def load_value(self, ref: str, where: Where, *, trim: bool) -> Any:
        """A ``file://`` value: .json/.yaml parsed, scripts refused, anything else read as text."""
        path = self.resolve(script_path(ref), where)
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

    def load_vars_files(
        self, refs: str | list[str], where: Where, folder: Path | None = None
    ) -> dict[str, Any]:
        """``vars: file://vars.yaml`` (or a glob, or a list of them): the mappings of variables the
        files hold, merged in order (a later file's var wins), as promptfoo's ``readVarsFiles``. Paths
        are relative to ``folder``: the folder of the tests file the test was written in (promptfoo's
        ``readTest``), else the config's. A vars file is data: the files its values name must lie
        inside the config's directory tree (see :meth:`check_data_refs`)."""
        merged: dict[str, Any] = {}
        for ref in [refs] if isinstance(refs, str) else refs:
            for path in self.expand(ref, where, folder):
                merged.update(self._vars_file(path, where))
        return merged

    def _vars_file(self, path: Path, where: Where) -> dict[str, Any]:
        if path.suffix.lower() not in DATA_SUFFIXES:
            raise ConfigError(
                f"{display_path(path)} cannot hold vars",
                where=where,
                hint=f"A vars file is one of: {', '.join(DATA_SUFFIXES)}",
            )
        document = self.read_document(path, where)
        if not isinstance(document.data, Mapping):
            raise ConfigError(f"{document.file} must hold a mapping of variables", where=where)
        if not self.allow_outside:
            for name, value in document.data.items():
                if is_file_ref(value):
                    self._confine(value, document.where((name,)))
        return dict(document.data)

    def check_data_refs(self, test: Any, origin: Origin, shown: JsonPath, folder: Path | None = None) -> bool:
        """A test read from a data file (a tests file of any format) may name files only inside the
        config's directory tree, so that a dataset cannot read any local file into prompts and
        reports; the config (written by its author) may name any file. False (problems recorded)
        when the test names a file it may not. ``folder``: the tests file's, where its vars files
        are looked up."""
        if self.allow_outside or not isinstance(test, Mapping):
            return True
        confined = True
        vars_files = isinstance(test.get("vars"), str | list)
        for inner, ref in data_file_refs(test):
            at = folder if vars_files and inner[0] == "vars" else None
            try:
                self._confine(ref, self.where(origin, inner, (*shown, *inner)), at)
            except ConfigError as error:
                self.problems.add_exception(error)
                confined = False
        return confined

    def _confine(self, ref: str, where: Where, folder: Path | None = None) -> None:
        """A ConfigFileError unless ``ref`` (relative to ``folder``, default the config's directory)
        names a path inside the config's directory tree; a glob must too, and so must every file it
        matches (a link inside the tree may point out of it)."""
        text = script_path(ref.removeprefix(_PYTHON_PREFIX))
        paths = [self.resolve(text, where, folder)]
        if is_glob(text):
            paths.extend(self._glob_files(text, where, folder))
        if not all(path.is_relative_to(self.base_dir) for path in paths):
            raise ConfigFileError(
                f"{ref!r} names a file outside the config's directory ({display_path(self.base_dir)})",
                where=where,
                hint="Files named in data files must lie inside the config's directory tree: move the file "
                "there, or set evaluateOptions.allowFileOutsideConfigDir: true in the config if you trust "
                "this data",
            )

    def where(self, origin: Origin, inner: JsonPath, shown: JsonPath) -> Place:
        """``file:line:col shown-path`` for a path inside a test, located when a message needs it."""
        return Place(_located, origin, inner, shown)


def _relative_to(folder: Path | None) -> str:
    if folder is None:
        return "file:// paths are relative to the config file's directory"
    return "vars files named in a tests file are relative to that file's directory, as in promptfoo"


def _located(origin: Origin, inner: JsonPath, shown: JsonPath) -> str:
    return f"{origin.locate(inner)} {format_path(shown)}"


def data_file_refs(test: Mapping[str, Any]) -> Iterator[tuple[JsonPath, str]]:
    """Every file a test loads or runs (as build.py reads them): its ``vars: file://`` or var values,
    assertion values and rubric prompts, and ``python:``/``file://`` providers."""
    variables = test.get("vars")
    if isinstance(variables, str):  # a vars file, with or without file:// as in promptfoo
        yield ("vars",), variables
    elif isinstance(variables, list):
        yield from ((("vars", index), ref) for index, ref in enumerate(variables) if isinstance(ref, str))
    elif isinstance(variables, Mapping):
        yield from ((("vars", name), value) for name, value in variables.items() if is_file_ref(value))
    options = test.get("options")
    if isinstance(options, Mapping):
        yield from _provider_refs(options.get("provider"), ("options", "provider"))
    yield from _provider_refs(test.get("provider"), ("provider",))  # the simulated user
    yield from _assertion_refs(test.get("assert"), ("assert",))


def _assertion_refs(items: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, Mapping):
            continue
        value = item.get("value")
        values = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for position, text in values:
            if is_file_ref(text):
                yield (*at, index, "value", *(() if position is None else (position,))), text
        if is_file_ref(item.get("rubricPrompt")):
            yield (*at, index, "rubricPrompt"), item["rubricPrompt"]
        yield from _provider_refs(item.get("provider"), (*at, index, "provider"))
        yield from _assertion_refs(item.get("assert"), (*at, index, "assert"))


def _provider_refs(value: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    """Script providers (``python:x.py``, ``file://x.py``) in a provider choice."""
    if isinstance(value, str):
        if value.startswith((_PYTHON_PREFIX, FILE_PREFIX)):
            yield at, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _provider_refs(item, (*at, index))
    elif isinstance(value, Mapping):
        if "id" in value:
            yield from _provider_refs(value["id"], (*at, "id"))
            yield from _provider_config_refs(value.get("config"), (*at, "config"))
        else:
            for key, item in value.items():
                yield from _provider_refs(key if key not in ("embedding", "text") else item, (*at, key))


def _provider_config_refs(config: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    """The files a provider's config loads (``tools: file://tools.yaml``, or a list of them) or runs (the
    simulated user's ``userProvider``)."""
    if not isinstance(config, Mapping):
        return
    yield from _provider_refs(config.get("userProvider"), (*at, "userProvider"))
    for key in TOOL_KEYS:
        value = config.get(key)
        refs = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for index, ref in refs:
            if is_file_ref(ref):
                yield (*at, key, *(() if index is None else (index,))), ref
