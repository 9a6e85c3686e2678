"""The fast YAML path against the full locating loader: on every document the fast path accepts, the
same values (types included) and the same line and column for every key and item.

Inputs: every YAML file of the repository, generated documents (YAML 1.2 scalars in every spelling,
quoting and block styles, nesting, flow and block collections, odd keys) and edits of both (anchors,
aliases, merge keys, tags, duplicates, stray brackets), so both the fast path and its refusals are met.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalh.config.locate import _LocatingLoader, parse_document
from evalh.config.plainyaml import Positions, key_text, load_plain
from evalh.config.safeload import LimitError, check_structure

ROOT = Path(__file__).resolve().parent.parent.parent
YAML_FILES = sorted(
    path
    for folder in ("examples", "benchmarks", "tests", "evalh")
    for pattern in ("*.yaml", "*.yml")
    for path in (ROOT / folder).rglob(pattern)
)
_WORDS = """
1_000 1__0 _1 1_ 0o17 0o 0O17 0x1F 0X1F 0x_1F 0xff_ff 0b101 0b 0b2 012 00 -0 +12 12.5.6 1,000
1e-3 1E5 -2.5e+2 1e 1.5e 1e400 .5 -.5 +.5 1. 0. -0.0 1_0.5 0.1_5 .inf -.Inf +.INF .NaN .nan NaN inf
true True TRUE tRue false False FALSE yes no on Off y n ~ null Null NULL nUll
2024-05-01 2001-12-14t21:59:43.10-05:00 1:30 << '<<' '1' 'true' "x\\ty" "\\u00e9" '' "" !
"""
SCALARS = [
    *_WORDS.split(),
    *["! 12", "!!str 1", "!!int 3", "&a 1", "*a", "&a {k: 1, 2: v}", "&b [x, y]", "*b", "&a [a, b]"],
    "9" * 30,
    "7" * 4001,
    "a b",
    "text: with colon",
    "# only a comment",
    "|\n  block\n  text\n",
    ">-\n  folded\n  text\n",
    "|+\n  kept\n\n",
    "[1, {a: b}, [], {}]",
    "{a: 1, 'b': [2, three]}",
]
KEYS = [
    "a",
    "b",
    "k",
    "type",
    "1",
    "1.5",
    "true",
    "null",
    "~",
    "0x1F",
    "'a'",
    '"b"',
    "<<",
    "<<",
    "? c",
    "*a ",
]
ALIASES = ["*a", "*b", "*c", "[*a]", "[*a, *c]", "[*c, {k: 2}]"]
MAPPINGS = ["{k: 1, 2: v}", "{1: x, k: [1]}", "{~: 1, b: {c: d}}", "{}", "\n    k: 1\n    true: t"]
MERGED = [*ALIASES, *MAPPINGS, "[]", "[*a, {k: 3}, *b]"]


def _full(text: str) -> tuple[Any, yaml.Node | None]:
    loader = _LocatingLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _marks(positions: Positions) -> Iterator[tuple[int, int]]:
    """Every key's and item's (line, column), in document order."""
    pairs = positions.values() if isinstance(positions, dict) else positions or []
    for mark, inner in pairs:
        yield mark.line, mark.column
        yield from _marks(inner)


def _node_marks(node: yaml.Node | None) -> Iterator[tuple[int, int]]:
    if isinstance(node, yaml.MappingNode):
        # merge keys are flattened into the tree, a merged key before the mapping's own one: the
        # last pair of a key gives its mark, in the order its first pair comes
        pairs = {_key(key): (key, value) for key, value in node.value}
        for key, value in pairs.values():
            yield key.start_mark.line, key.start_mark.column
            yield from _node_marks(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield item.start_mark.line, item.start_mark.column
            yield from _node_marks(item)


def _key(node: yaml.Node) -> Any:
    """A key node's key in the data (``~`` and ``null`` are one key)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:str":
        return node.value
    return key_text(_full(node.value)[0])


def _typed(value: Any) -> Any:
    """``value`` with every scalar's type beside it: 1 == 1.0 == True would hide a wrong type."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


def assert_same_as_full_loader(text: str) -> bool:
    """True when the fast path read ``text`` (and read it as the full loader does)."""
    try:
        fast = load_plain(text, located=True)
    except LimitError as error:  # the full loader's first check finds the same
        with pytest.raises(LimitError) as full:
            check_structure(text)
        assert str(full.value) == str(error)
        return False
    if fast is None:
        return False
    unlocated = load_plain(text, located=False)
    assert unlocated is not None and unlocated[1] is None and _typed(unlocated[0]) == _typed(fast[0])
    data, node = _full(text)  # a plain document has no alias: the full loader is safe on it
    assert _typed(fast[0]) == _typed(data), text
    assert list(_marks(fast[1])) == list(_node_marks(node)), text
    return True


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_yaml_file_of_the_repository_reads_as_the_full_loader_reads_it(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: refused before any YAML is read")
    assert_same_as_full_loader(text)


def test_the_repository_files_mostly_take_the_fast_path() -> None:
    # the comparison above would pass vacuously if the fast path refused everything
    texts = [path.read_text(encoding="utf-8-sig") for path in YAML_FILES if path.parent.name != "broken"]
    fast = sum(assert_same_as_full_loader(text) for text in texts)
    assert len(texts) > 40 and fast > 0.8 * len(texts)


@st.composite
def documents(draw: st.DrawFn, depth: int = 0) -> str:
    """A YAML document in block or flow style; a block value is written after its key or dash."""
    kind = draw(st.sampled_from(["scalar", "mapping", "sequence"] if depth < 4 else ["scalar"]))
    if kind == "scalar":
        return draw(st.sampled_from(SCALARS + ALIASES) | st.text(alphabet="ab1_.-+:#'\"~ eE0x", max_size=6))
    indent = "  " * depth
    count = draw(st.integers(0 if depth else 1, 4))
    if draw(st.booleans()):  # flow style
        items = [draw(st.sampled_from(SCALARS[:60] + ALIASES)) for _ in range(count)]
        if kind == "sequence":
            return "[" + ", ".join(items) + "]"
        return "{" + ", ".join(f"{draw(st.sampled_from(KEYS))}: {item}" for item in items) + "}"
    lines = []
    for _ in range(max(count, 1)):
        lead = "- " if kind == "sequence" else draw(st.sampled_from(KEYS)) + ": "
        if lead == "<<: " and draw(st.booleans()):
            child = draw(st.sampled_from(MERGED))
        else:
            child = draw(documents(depth + 1)).replace("\n", "\n" + indent + "  ")
        lines.append(f"{indent}{lead}{child}")
    return "\n" + "\n".join(lines)


def _collections(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)


_EDITS = ["&a ", "*a", "<<: *a\n", "!!str ", "! ", "[", "]", "{", "}", ": ", "- ", "\n", "  ", "'", '"', "#"]


@st.composite
def anchored_documents(draw: st.DrawFn) -> str:
    """Anchors first, then a document whose values and merge keys (``<<``) may name them."""
    anchors = "".join(
        f"  {name}: &{name} {draw(st.sampled_from(SCALARS[:60]) | st.sampled_from(MAPPINGS))}\n"
        for name in "abc"
    )
    return f"anchors:\n{anchors}uses: {draw(documents(1))}\n"


@st.composite
def edited_documents(draw: st.DrawFn) -> str:
    source = draw(st.sampled_from(["generated", "anchored", "dumped"]))
    if source == "generated":
        text = draw(documents()).lstrip("\n") + "\n"
    elif source == "anchored":
        text = draw(anchored_documents())
    else:
        leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
        data = draw(st.recursive(leaves, _collections, max_leaves=12))
        style = draw(st.sampled_from([None, "'", '"', "|", ">"]))
        text = yaml.safe_dump(data, default_style=style, default_flow_style=draw(st.booleans()))
    for _ in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(text)))
        text = text[:position] + draw(st.sampled_from(_EDITS)) + text[position:]
    return text


@settings(
    max_examples=int(os.environ.get("EVALH_FUZZ_EXAMPLES", "600")),
    derandomize="EVALH_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(text=edited_documents())
def test_generated_documents_read_as_the_full_loader_reads_them(text: str) -> None:
    assert_same_as_full_loader(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1: x\ntrue: t\n1.0: f\n", {"1": "x", "true": "t", "1.0": "f"}),
        ("a: &x 1\n1: x\ntrue: t\nb: *x\n", {"a": 1, "1": "x", "true": "t", "b": 1}),  # the full path
        ("base: &b {1: a}\nc: {<<: *b, true: t}\n", {"base": {"1": "a"}, "c": {"1": "a", "true": "t"}}),
    ],
)
def test_keys_1_and_true_stay_apart_on_both_paths(text: str, expected: dict[str, Any]) -> None:
    # Python's dict merged 1, 1.0 and True before they became text; the full loader kept only one
    assert parse_document(text, "f.yaml").data == expected


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\nc: &y [1, {d: e}]\nf: *y\ng: [*x, *y]\n",
        "<<: {a: 1, b: 2}\nb: 3\n",
        "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc: {w: 0, <<: [*a, *b], x: 3}\nd: {<<: *b}\ne: {<<: []}\n",
        "base: &base\n  type: contains\n  value: x\ntests:\n  - assert:\n      - <<: *base\n"
        "        value: y\n      - *base\n  - {assert: [*base]}\n",
        "a: &a {k: 1}\nb: &b {<<: *a, j: 2}\nc:\n  <<: *b\n  k: 3\n",  # a merge of a merged mapping
        "a: &k 1\n*k : one\n",  # an alias as a key
    ],
)
def test_anchors_aliases_and_merge_keys_take_the_fast_path(text: str) -> None:
    assert assert_same_as_full_loader(text)


def test_an_alias_is_the_anchored_value_itself_as_in_the_full_loader() -> None:
    data = parse_document("a: &a {x: [1]}\nb: *a\nc: {<<: *a}\n", "f.yaml").data
    assert data["b"] is data["a"] and data["c"]["x"] is data["a"]["x"]
