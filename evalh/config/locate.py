"""Where things are: YAML/JSON loading that remembers line:column, JSON paths, and problem collection.

Every mapping key and sequence item of a loaded document gets a position, so any JSON path
(``tests[3].assert[1].threshold``) maps to ``file:line:col``. Problems are collected across the whole
config and raised together as one error, one paragraph each.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import yaml

from evalh.config.fastyaml import UNSURE, read_fast
from evalh.config.parse_cache import read_cached
from evalh.config.plainyaml import Positions, key_text, load_plain, mark_at
from evalh.config.safeload import MAX_FILE_BYTES, LimitError, SafeLoader, check_structure, parse_json
from evalh.errors import ConfigError, ConfigFileError, Place, Where

__all__ = [
    "MAX_PROBLEMS",
    "Document",
    "JsonPath",
    "Problems",
    "close_matches",
    "display_path",
    "format_path",
    "load_document",
    "os_reason",
    "parse_document",
    "path_errors",
    "read_bytes_file",
    "read_text_file",
]

JsonPath = tuple[str | int, ...]
MAX_PROBLEMS = 20
_IDENTIFIER = re.compile(r"^[A-Za-z_$][\w$-]*$")


class _LocatingLoader(SafeLoader):
    """A safe loader that keeps the composed node tree (for positions) and notices duplicate keys."""

    has_duplicates = False

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):  # `!!set x`: PyYAML says "expected a mapping node"
            return super().construct_mapping(node, deep=deep)
        keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
        if len(keys) != len(set(keys)):
            self.has_duplicates = True
        self.flatten_mapping(node)  # merge keys (``<<``), as SafeConstructor.construct_mapping does
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                problem = "found unhashable key"
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, problem, key_node.start_mark
                )
            # each key made text as it is read: ``1:`` and ``true:`` were one Python key before
            mapping[key_text(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def format_path(path: JsonPath) -> str:
    """``("tests", 3, "assert", 1)`` -> ``tests[3].assert[1]``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        # an ASCII identifier (most keys) is told apart without the regex
        elif (part.isascii() and part.isidentifier()) or _IDENTIFIER.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def display_path(path: Path) -> str:
    """A path as a user wants to read it: relative to the current directory when inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


@dataclass
class Document:
    """A loaded YAML/JSON document and its node tree, which gives every key and item a position.

    A document read by the fast path keeps its ``text`` instead of a node tree, and reads it again
    for its ``positions`` (plainyaml.Positions) the first time a message needs a line and column."""

    data: Any
    file: str
    root: yaml.Node | None = None
    positions: Positions = None
    text: str | None = None

    def locate(self, path: JsonPath) -> str:
        """``file:line:col`` of ``path`` (or of its nearest ancestor that has a position)."""
        if self.text is not None:
            plain = load_plain(self.text, located=True)  # the text read before: plain again
            self.positions, self.text = plain[1] if plain is not None else None, None
        if self.positions is not None:
            mark = mark_at(self.positions, path)
        else:
            mark = _mark_at(self.root, path) if self.root is not None else None
        return f"{self.file}:{mark.line + 1}:{mark.column + 1}" if mark is not None else self.file

    def where(self, path: JsonPath) -> str:
        """``file:line:col path``."""
        shown = format_path(path)
        location = self.locate(path)
        return f"{location} {shown}" if shown else location

    def place(self, path: JsonPath, shown: JsonPath | None = None) -> Place:
        """``file:line:col`` of ``path`` and the words of ``shown`` (default: ``path``), put together
        only when a message needs them."""
        return Place(self.where, path) if shown is None else Place(_located, self, path, shown)


def _located(document: Document, path: JsonPath, shown: JsonPath) -> str:
    return f"{document.locate(path)} {format_path(shown)}"


def _mark_at(node: yaml.Node, path: JsonPath) -> yaml.Mark | None:
    """The mark of a mapping key or sequence item at ``path``; walks the node tree only when asked."""
    mark: yaml.Mark | None = None
    for part in path:
        if isinstance(node, yaml.MappingNode):
            found = [
                (key, value)
                for key, value in node.value
                if isinstance(key, yaml.ScalarNode) and str(key.value) == str(part)
            ]
            if not found:
                break
            key_node, node = found[-1]
            mark = key_node.start_mark
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            mark = node.start_mark
        else:
            break
    return mark


def _duplicate_keys(node: yaml.Node, path: JsonPath, file: str) -> list[str]:
    problems: list[str] = []
    stack: list[tuple[yaml.Node, JsonPath]] = [(node, path)]
    while stack and len(problems) < MAX_PROBLEMS:
        current, at = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = str(key_node.value)
                    if key in seen and key != "<<":
                        mark = key_node.start_mark
                        shown = format_path((*at, key))
                        problems.append(
                            f"{file}:{mark.line + 1}:{mark.column + 1} {shown}: duplicate key {key!r}. "
                            "YAML keeps only the last one; remove or rename the other"
                        )
                    seen.add(key)
                    stack.append((value_node, (*at, key)))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((item, (*at, i)) for i, item in enumerate(current.value))
    return problems


def parse_document(text: str, file: str, *, json_fallback: bool = False) -> Document:
    """Parse YAML (or JSON, which YAML reads too) into data plus positions. Raises ConfigError.

    With ``json_fallback``, text that is not YAML is read as JSON (without positions): a few valid
    JSON files are not YAML (a key over 1,024 characters)."""
    try:
        return _parse_yaml(text, file)
    except _SyntaxError:
        if not json_fallback:
            raise
    return Document(data=parse_json(text, file), file=file)


class _SyntaxError(ConfigError):
    """The text is not YAML (as opposed to YAML beyond a bound)."""


def _parse_yaml(text: str, file: str) -> Document:
    try:  # the data kept from an earlier read of this text, or read by yaml_rs or libyaml's events
        data = read_cached(text, _read_plain)
    except LimitError as error:
        raise _beyond_bound(file, error) from None
    if data is not UNSURE:
        return Document(data=data, file=file, text=text)
    return _parse_with_loader(text, file)


def _read_plain(text: str) -> Any:
    """The data yaml_rs reads (where it reads as libyaml's readers do), else libyaml's events (plainyaml);
    UNSURE when only the full loader can (merge keys, duplicate keys, errors to word)."""
    data = read_fast(text)
    if data is UNSURE:
        plain = load_plain(text, located=False)
        data = UNSURE if plain is None else plain[0]
    return data


def _parse_with_libyaml(text: str, file: str) -> Document:
    """The data from libyaml's events (plainyaml), or from the full loader, which words every error."""
    try:
        plain = load_plain(text, located=False)
    except LimitError as error:
        raise _beyond_bound(file, error) from None
    if plain is not None:
        return Document(data=plain[0], file=file, text=text)
    return _parse_with_loader(text, file)


def _parse_with_loader(text: str, file: str) -> Document:
    """The data from the full loader, which words every error and keeps the node tree's positions."""
    loader = _LocatingLoader(text)
    node: yaml.Node | None = None
    try:
        check_structure(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except LimitError as error:
        raise _beyond_bound(file, error) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = _mark_text(file, mark)
        problem = error.problem or "not valid YAML"
        context = f" ({error.context})" if error.context else ""
        start = error.context_mark
        if error.context and start is not None and mark is not None and start.line != mark.line:
            context = f" ({error.context} that starts at line {start.line + 1}, column {start.column + 1})"
        raise _SyntaxError(
            f"invalid YAML: {problem}{context}",
            where=where,
            hint="Check the indentation and quoting around this line (quote values containing ': ' or '#')",
        ) from None
    except yaml.reader.ReaderError as error:
        raise _unreadable_character(text, file, error) from None
    except yaml.YAMLError as error:
        raise _SyntaxError(f"invalid YAML: {error}", where=file) from None
    finally:
        loader.dispose()
    if node is not None and loader.has_duplicates:
        raise ConfigError("\n\n".join(_duplicate_keys(node, (), file)))
    return Document(data=data, file=file, root=node)


def _unreadable_character(text: str, file: str, error: yaml.reader.ReaderError) -> ConfigError:
    """A character YAML may not hold raw (a control character): located by line and column, which
    PyYAML gives only as an offset into the text."""
    offset = min(max(error.position, 0), len(text))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    code = error.character if isinstance(error.character, int) else ord(error.character)
    return _SyntaxError(
        f"invalid YAML: the character U+{code:04X} (a control or non-printable character) must be escaped",
        where=f"{file}:{line}:{column}",
        hint=f'Remove it, or write it as an escape inside a double-quoted string ("\\u{code:04x}")',
    )


def _beyond_bound(file: str, error: LimitError) -> ConfigError:
    return ConfigError(error.problem or "", where=_mark_text(file, error.problem_mark), hint=error.hint)


def _mark_text(file: str, mark: yaml.Mark | None) -> str:
    return f"{file}:{mark.line + 1}:{mark.column + 1}" if mark is not None else file


def read_bytes_file(
    path: Path, where: Where | None, *, limit: int | None = None, too_large: str = ""
) -> bytes:
    """A file's bytes. Raises ConfigFileError located at ``where`` (the place that names the file;
    None for the config itself); FileNotFoundError is left to the caller.

    Only regular files of at most ``limit`` bytes are read: a FIFO would block forever and
    ``/dev/zero`` would fill the memory. ``too_large``: what to do about a larger file (the hint)."""
    shown = display_path(path)
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        _check_regular_file(path, shown, where, limit, too_large)
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:
        raise ConfigFileError(f"cannot read {shown}: {os_reason(error)}", where=where) from None
    if len(data) > limit:
        raise _too_large(shown, where, limit, too_large)
    return data


def read_text_file(path: Path, where: Where | None, *, limit: int | None = None, too_large: str = "") -> str:
    """A UTF-8 text file, a leading BOM dropped (see :func:`read_bytes_file` for the rest)."""
    shown = display_path(path)
    data = read_bytes_file(path, where, limit=limit, too_large=too_large)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigFileError(
            f"{shown}:{_text_position(error.object, error.start)} is not UTF-8 text "
            f"(byte 0x{error.object[error.start]:02x})",
            where=where,
            hint="Save the file as UTF-8",
        ) from None


def os_reason(error: OSError | ValueError | RuntimeError) -> str:
    """Why the operating system refused a path, in words (never a traceback)."""
    if isinstance(error, ValueError) and "null" in str(error):
        return "the path contains a NUL character"
    text = (error.strerror if isinstance(error, OSError) else None) or str(error) or type(error).__name__
    return text[:1].lower() + text[1:]


@contextmanager
def path_errors(text: str, where: Where | None) -> Iterator[None]:
    """A path the operating system refuses (a NUL, a name over 255 bytes, a symlink loop, an unknown
    ``~user``) -> a located ConfigFileError."""
    try:
        yield
    except (OSError, ValueError, RuntimeError) as error:
        raise ConfigFileError(f"cannot use the path {text!r}: {os_reason(error)}", where=where) from None


def _check_regular_file(path: Path, shown: str, where: Where | None, limit: int, too_large: str) -> None:
    """A ConfigFileError unless ``path`` is a regular file small enough to read."""
    info = path.stat()
    if stat.S_ISDIR(info.st_mode):
        raise ConfigFileError(f"{shown} is a directory, not a file", where=where)
    if not stat.S_ISREG(info.st_mode):
        raise ConfigFileError(
            f"{shown} is not a regular file (it is a {_file_kind(info.st_mode)})",
            where=where,
            hint="Name a text file; evalh does not read devices, FIFOs or sockets",
        )
    if info.st_size > limit:
        raise _too_large(shown, where, limit, too_large)


def _file_kind(mode: int) -> str:
    kinds = {stat.S_ISFIFO: "FIFO", stat.S_ISCHR: "character device", stat.S_ISBLK: "block device"}
    return next((name for test, name in kinds.items() if test(mode)), "socket or other special file")


def _too_large(shown: str, where: Where | None, limit: int, hint: str) -> ConfigFileError:
    return ConfigFileError(
        f"{shown} is larger than {limit // (1024 * 1024)} MiB",
        where=where,
        hint=hint
        or "evalh reads config and data files of at most this size; split the tests into several files",
    )


def _text_position(data: bytes, offset: int) -> str:
    """``line:column`` (both from 1, the column in characters) of a byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return f"{line}:{column}"


def load_document(path: Path) -> Document:
    """Read and parse a YAML/JSON file. Raises ConfigFileError when it cannot be read."""
    file = display_path(path)
    try:
        text = read_text_file(path, None)
    except FileNotFoundError:
        raise ConfigFileError("file not found", where=file, hint="Check the path and its spelling") from None
    return parse_document(text, file)


@dataclass
class Problems:
    """Problems found while loading, raised together (capped at MAX_PROBLEMS) as one error."""

    problems: list[tuple[type[ConfigError], str]] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    total: int = 0

    def add(
        self,
        message: str,
        *,
        where: Where | None = None,
        hint: str | None = None,
        kind: type[ConfigError] = ConfigError,
    ) -> None:
        text = ConfigError(message, where=where, hint=hint).render()
        self.add_error(kind, text)

    def add_error(self, kind: type[ConfigError], text: str) -> None:
        if text in self._seen:
            return
        self._seen.add(text)
        self.total += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((kind, text))

    def add_exception(self, error: ConfigError) -> None:
        self.add_error(type(error), error.render())

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self, file: str) -> None:
        if not self.problems:
            return
        kinds = {kind for kind, _ in self.problems}
        kind = kinds.pop() if len(kinds) == 1 else ConfigError
        if self.total == 1:
            raise kind(self.problems[0][1])
        more = self.total - len(self.problems)
        tail = f"\n\n... and {more} more problem(s)" if more > 0 else ""
        body = "\n\n".join(text for _, text in self.problems)
        raise kind(f"{self.total} problems in the config\n\n{body}{tail}", where=file)


def close_matches(word: str, candidates: Sequence[str]) -> str | None:
    """The best did-you-mean candidate for ``word``, or None."""
    found = get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None
