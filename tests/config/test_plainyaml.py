"""The fast YAML path: the same data as the locating loader, positions composed only when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalh.config.load import load_suite
from evalh.config.locate import Document, _LocatingLoader, parse_document
from evalh.config.plainyaml import load_plain
from evalh.errors import ConfigError

CONFIG = "tests:\n  - vars: {a: 1, b: [x, {c: d}]}\n    assert:\n      - type: equals\n        value: 'x'\n"
PLAIN = [
    "a: 1\nb: 1.5\nc: true\nd: yes\ne: null\nf: ~\ng: 1e-3\nh: .5\ni: 0x1F\nj: '1'\nk: 2024-05-01\nl:\n",
    "m: [1, {a: b}, [], {}]\nn: |\n  block\n  text\no: >-\n  folded\n  text\n",
    "- .inf\n- -.Inf\n- .nan\n- +12\n- 1_000\n- 0o17\n- 0b101\n- FALSE\n- 'true'\n- \"x\\ty\"\n",
    "'<<': 1\na: ! 12\n1.5: z\nnull: y\n",
    "",
    "just text\n",
]
NOT_PLAIN = [
    "a: &x 1\nb: *x\n",  # anchors and aliases
    "- !!str 1\n",  # explicit tags
    "x: !!int 3\n",
    "<<: {a: 1}\n",  # merge keys
    "? [a]\n: 1\n",  # a collection as a key
    "a: 1\na: 2\n",  # duplicate keys: the full loader locates each one
    "---\na\n---\nb\n",  # two documents
    "a: [\n",  # not YAML
    "[" * 150 + "]" * 150,  # deeper than MAX_DEPTH
]


def _full(text: str) -> Any:
    loader = _LocatingLoader(text)
    try:
        node = loader.get_single_node()
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


@pytest.mark.parametrize("text", PLAIN)
def test_plain_documents_read_as_the_locating_loader_reads_them(text: str) -> None:
    plain = load_plain(text)
    assert plain is not None
    assert repr(plain[0]) == repr(_full(text))  # repr: nan != nan, and 1 == 1.0 would hide a type


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_other_documents_take_the_full_path(text: str) -> None:
    assert load_plain(text) is None


def test_keys_true_and_1_stay_apart() -> None:
    # Python's dict merged the keys 1 and True before they became text; "1" took the value of true:.
    assert parse_document("1: x\ntrue: t\n", "f.yaml").data == {"1": "x", "true": "t"}


@pytest.mark.parametrize("text", [*PLAIN[:4], CONFIG])
def test_every_key_and_item_is_located_as_the_node_tree_locates_it(text: str) -> None:
    fast = parse_document(text, "f.yaml")
    assert fast.root is None and fast.positions is not None  # no node tree was composed
    loader = _LocatingLoader(text)
    full = Document(data=fast.data, file="f.yaml", root=loader.get_single_node())
    loader.dispose()
    paths = list(_paths(fast.data, ()))
    assert len(paths) > 1 or not isinstance(fast.data, (dict, list))
    for path in [*paths, ("nowhere",), ("tests", 99, "x")]:
        assert fast.locate(path) == full.locate(path), path


def _paths(data: Any, path: tuple[str | int, ...]) -> Any:
    yield path
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from _paths(value, (*path, key))


def test_a_plain_config_still_locates_its_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert:\n"
        "      - type: equals\n        value: hi\n      - type: contains\n        threshold: 2\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_suite(tmp_path / "c.yaml")
    assert "c.yaml:8:" in raised.value.render()
