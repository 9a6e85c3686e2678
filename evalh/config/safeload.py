"""Reading YAML and JSON text safely: numbers as YAML 1.2 reads them, and bounds a hostile file cannot pass.

Scalars resolve as in js-yaml, which promptfoo uses (the YAML 1.2 core schema): ``1e-3`` and ``.5`` are
numbers, ``true``/``false`` (any case style) the only booleans, ``yes``/``no``/``on``/``off`` text, and
dates stay text. Before a YAML document is built, one pass over its parse events bounds its nesting
(libyaml's composer recurses in C and crashes the process on ~50,000 levels) and the nodes its aliases
add (a 400-byte "billion laughs" file otherwise expands to hundreds of millions of nodes in every
later walk). Whole numbers are bounded too: Python refuses to turn one of over 4,300 digits into text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from evalh.errors import ConfigError

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "LimitError",
    "SafeLoader",
    "check_structure",
    "nesting_depth",
    "parse_json",
    "resolve_plain",
]

MAX_FILE_BYTES = 128 * 1024 * 1024
MAX_DEPTH = 100
# Aliases may add this many nodes, or ten times the nodes written when that is more: a 50,000-test
# suite repeating an anchored list of assertions stays far below it, a "billion laughs" does not.
MAX_ALIAS_NODES = 1_000_000
_ALIAS_RATIO = 10
MAX_INT_DIGITS = 4000
_MAX_INT = 10**MAX_INT_DIGITS

_DEPTH_HINT = f"evalh reads configs and data files nested at most {MAX_DEPTH} levels deep; flatten the data"

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"

# js-yaml 4's core schema, plus the sign YAML 1.2 allows before ".5"; "_" may separate digits.
_INT_TEXT = re.compile(
    r"[-+]?(?:0b[01_]*[01]|0o[0-7_]*[0-7]|0x[0-9a-fA-F_]*[0-9a-fA-F]|[0-9](?:[0-9_]*[0-9])?)\Z"
)
_FLOAT_TEXT = re.compile(
    r"(?:[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)
_BOOL_TEXT = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
_KEYWORDS = {
    "~": _NULL,
    "null": _NULL,
    "Null": _NULL,
    "NULL": _NULL,
    "true": _BOOL,
    "True": _BOOL,
    "TRUE": _BOOL,
    "false": _BOOL,
    "False": _BOOL,
    "FALSE": _BOOL,
    "<<": _MERGE,
}
_NUMBER_START = frozenset("-+.0123456789")
_BOOL_VALUES = {"true": True, "false": False}

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def resolve_plain(value: str) -> str:
    """The tag of a plain (unquoted) scalar. Most scalars are text: the first character decides fast."""
    if not value:
        return _NULL
    keyword = _KEYWORDS.get(value)
    if keyword is not None:
        return keyword
    if value[0] not in _NUMBER_START or value[-1] == "_":
        return _STR
    if _INT_TEXT.match(value):
        return _INT
    return _FLOAT if _FLOAT_TEXT.match(value) else _STR


class SafeLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """PyYAML's safe loader (libyaml when present) with YAML 1.2 core-schema scalars.

    ``resolve`` replaces PyYAML's YAML 1.1 resolver (its regexes per scalar were most of the time
    spent composing a large suite); path resolvers are not used, so descending costs nothing."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return resolve_plain(value) if implicit[0] else _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Merge keys as the YAML merge spec and js-yaml read them, whatever PyYAML's version: of
        ``<<: [*a, *b]`` an earlier mapping wins over a later one, and the mapping's own keys win over
        both. PyYAML 6.0.4 changed this (a later mapping won for keys of more than one character), so
        evalh keeps the rule here, where the fast path (plainyaml) keeps the same one."""
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        index = 0
        while index < len(node.value):
            key_node, value_node = node.value[index]
            if key_node.tag == _MERGE:
                del node.value[index]
                merged.extend(self._merged_pairs(node, value_node))
            elif key_node.tag == "tag:yaml.org,2002:value":
                key_node.tag = _STR
                index += 1
            else:
                index += 1
        if merged:
            node.value = merged + node.value

    def _merged_pairs(self, node: yaml.MappingNode, value: yaml.Node) -> list[tuple[yaml.Node, yaml.Node]]:
        """The pairs one merge key brings, the last source's first so that an earlier source's pair,
        constructed later, wins."""
        sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        for source in reversed(sources):
            if not isinstance(source, yaml.MappingNode):
                expected = "a mapping" if source is not value else "a mapping or list of mappings"
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"expected {expected} for merging, but found {source.id}",
                    source.start_mark,
                )
            self.flatten_mapping(source)
            pairs.extend(source.value)
        return pairs

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


def _scalar_text(loader: yaml.SafeLoader, node: yaml.ScalarNode, pattern: re.Pattern[str], kind: str) -> str:
    """The text of a scalar that must read as ``kind`` (an explicit ``!!int abc`` skips the resolver)."""
    text = str(loader.construct_scalar(node))
    if not pattern.match(text) or text.endswith("_"):
        raise yaml.constructor.ConstructorError(None, None, f"{text[:40]!r} is not {kind}", node.start_mark)
    return text


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = _scalar_text(loader, node, _INT_TEXT, "a whole number").replace("_", "")
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-")
    base = {"0b": 2, "0o": 8, "0x": 16}.get(digits[:2], 10)
    if base == 10 and len(digits) > MAX_INT_DIGITS:
        raise _too_large(node)
    value = sign * int(digits[2:] if base != 10 else digits, base)
    if abs(value) >= _MAX_INT:
        raise _too_large(node)
    return value


class LimitError(yaml.MarkedYAMLError):
    """A document beyond one of evalh's bounds (not a YAML syntax error): ``problem`` at ``problem_mark``."""

    def __init__(self, problem: str, mark: Any, hint: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.hint = hint


def _too_large(node: yaml.Node) -> LimitError:
    return LimitError(
        f"this whole number has more than {MAX_INT_DIGITS:,} digits",
        node.start_mark,
        "Quote it to keep it as text, or write it as a float (e.g. 1e300)",
    )


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = _scalar_text(loader, node, _FLOAT_TEXT, "a number").replace("_", "").lower()
    if text.endswith((".inf", ".nan")):
        sign = -1.0 if text[0] == "-" else 1.0
        return sign * float(text.lstrip("+-")[1:])
    return float(text)


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return _BOOL_VALUES[_scalar_text(loader, node, _BOOL_TEXT, "true or false").lower()]


def _construct_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    # Dates stay text, as in JSON (a `date: 2024-05-01` var must not become a date object), and
    # !!binary stays its base64 text: every value evalh handles is JSON-shaped.
    return str(loader.construct_scalar(node))


SafeLoader.add_constructor(_INT, _construct_int)
SafeLoader.add_constructor(_FLOAT, _construct_float)
SafeLoader.add_constructor(_BOOL, _construct_bool)
SafeLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
SafeLoader.add_constructor("tag:yaml.org,2002:binary", _construct_text)
# !!omap and !!pairs are lists of one-key mappings; read them as such rather than as tuples.
SafeLoader.add_constructor("tag:yaml.org,2002:omap", SafeLoader.construct_yaml_seq)
SafeLoader.add_constructor("tag:yaml.org,2002:pairs", SafeLoader.construct_yaml_seq)

_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def check_structure(text: str) -> None:
    """Refuse a document nested deeper than MAX_DEPTH, or whose aliases add too many nodes, before
    it is composed. Raises yaml.MarkedYAMLError (located at the offending node) or yaml.YAMLError."""
    loader = SafeLoader(text)
    try:
        _scan(loader)
    except yaml.MarkedYAMLError as error:
        # libyaml 0.2.6 (PyYAML 6.0.4's wheels) stops at 1,000 levels itself, scanning ahead of the
        # events: the same bound, in evalh's words
        if "maximum nesting depth" not in str(error.problem):
            raise
        raise LimitError(f"nested deeper than {MAX_DEPTH} levels", error.problem_mark, _DEPTH_HINT) from None
    finally:
        loader.dispose()


def _scan(loader: yaml.SafeLoader) -> None:
    written = 0  # nodes as written
    expanded = 0  # nodes once every alias is replaced by its anchor's node
    anchors: dict[str, int] = {}  # anchor -> expanded size of its node
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, ``expanded`` before it) per open collection
    for event in _events(loader):
        if isinstance(event, yaml.ScalarEvent):
            written += 1
            expanded += 1
            if event.anchor is not None:
                anchors[event.anchor] = 1
        elif isinstance(event, _OPEN):
            written += 1
            open_nodes.append((event.anchor, expanded))
            expanded += 1
            if len(open_nodes) > MAX_DEPTH:
                raise _structure_error(event, f"nested deeper than {MAX_DEPTH} levels", _DEPTH_HINT)
        elif isinstance(event, _CLOSE):
            anchor, before = open_nodes.pop()
            if anchor is not None:
                anchors[anchor] = expanded - before
        elif isinstance(event, yaml.AliasEvent):
            expanded += _alias_size(event, anchors, open_nodes)
            if expanded - written > max(MAX_ALIAS_NODES, _ALIAS_RATIO * written):
                raise _structure_error(
                    event,
                    f"aliases (*{event.anchor} here) expand this document to at least {expanded:,} nodes, "
                    f"from {written:,} written up to here",
                    "Aliases may add at most 1,000,000 nodes (or ten times the nodes written); "
                    "write the repeated parts out, or use fewer levels of aliases",
                )


def _events(loader: yaml.SafeLoader) -> Iterator[yaml.Event]:
    while True:
        event: yaml.Event | None = loader.get_event()  # type: ignore[no-untyped-call]
        if event is None or isinstance(event, yaml.StreamEndEvent):
            return
        yield event


def _alias_size(
    event: yaml.AliasEvent, anchors: dict[str, int], open_nodes: list[tuple[str | None, int]]
) -> int:
    if any(anchor == event.anchor for anchor, _ in open_nodes):
        raise _structure_error(
            event,
            f"the alias *{event.anchor} is inside the node it refers to (a cycle)",
            "A node cannot contain itself; copy the part you need instead",
        )
    return anchors.get(event.anchor or "", 1)  # an undefined alias counts 1: the composer reports it


def _structure_error(event: yaml.Event, problem: str, hint: str) -> LimitError:
    return LimitError(problem, event.start_mark, hint)


class _NumberTooLarge(ValueError):
    pass


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _NumberTooLarge(text)
    return int(text)


def parse_json(
    text: str,
    file: str,
    line: int | None = None,
    *,
    max_depth: int = MAX_DEPTH,
    depth_hint: str = _DEPTH_HINT,
) -> Any:
    """JSON text (one JSONL line when ``line`` is given), nested at most ``max_depth`` levels. Raises
    ConfigError located in ``file``."""
    where = f"{file}:{line}" if line is not None else file
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as error:
        row = line if line is not None else error.lineno
        raise ConfigError(f"invalid JSON: {error.msg}", where=f"{file}:{row}:{error.colno}") from None
    except _NumberTooLarge:
        raise ConfigError(
            f"a whole number has more than {MAX_INT_DIGITS:,} digits",
            where=where,
            hint="Quote it to keep it as text, or write it as a float (e.g. 1e300)",
        ) from None
    except RecursionError:
        data = None
        depth = max_depth + 1
    else:
        depth = nesting_depth(data, max_depth)
    if depth > max_depth:
        place = _too_deep_at(text, max_depth) if line is None else ""
        raise ConfigError(
            f"nested deeper than {max_depth} levels",
            where=f"{where}:{place}" if place else where,
            hint=depth_hint,
        )
    return data


_JSON_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings skipped whole: a "[" in one is text


def _too_deep_at(text: str, max_depth: int) -> str:
    """``line:column`` of the bracket opening level ``max_depth + 1`` of a JSON text ("" if none)."""
    depth = 0
    for match in _JSON_BRACKET.finditer(text):
        char = match.group()[0]
        if char in "[{":
            depth += 1
            if depth > max_depth:
                offset = match.start()
                return f"{text.count(chr(10), 0, offset) + 1}:{offset - text.rfind(chr(10), 0, offset)}"
        elif char in "]}":
            depth -= 1
    return ""


def nesting_depth(value: Any, max_depth: int = MAX_DEPTH) -> int:
    """How many lists/mappings deep ``value`` goes (without recursion; stops just past ``max_depth``).
    Level by level, keeping only the containers of each: a 50,000-row report is walked in about the
    time json.loads takes to read it."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level and depth <= max_depth:
        depth += 1
        children: list[Any] = []
        for item in level:
            children.extend(item.values() if isinstance(item, dict) else item)
        level = [child for child in children if isinstance(child, dict | list)]
    return depth
