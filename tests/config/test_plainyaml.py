"""The fast YAML path: the same data as the locating loader, positions composed only when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.config.locate import Document, _LocatingLoader, parse_document
from evalh.config.plainyaml import load_plain
from evalh.config.safeload import LimitError
from evalh.errors import ConfigError, Place, then

CONFIG = "tests:\n  - vars: {a: 1, b: [x, {c: d}]}\n    assert:\n      - type: equals\n        value: 'x'\n"
PLAIN = [
    "a: 1\nb: 1.5\nc: true\nd: yes\ne: null\nf: ~\ng: 1e-3\nh: .5\ni: 0x1F\nj: '1'\nk: 2024-05-01\nl:\n",
    "m: [1, {a: b}, [], {}]\nn: |\n  block\n  text\no: >-\n  folded\n  text\n",
    "- .inf\n- -.Inf\n- .nan\n- +12\n- 1_000\n- 0o17\n- 0b101\n- FALSE\n- 'true'\n- \"x\\ty\"\n",
    "'<<': 1\na: ! 12\n1.5: z\nnull: y\n",
    "",
    "just text\n",
    "a: &x 1\nb: *x\nc: &y [1, {d: e}]\nf: *y\n",  # anchors and aliases
    "<<: {a: 1, b: 2}\nb: 3\n",  # merge keys
    "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc: {w: 0, <<: [*a, *b], x: 3}\nd: {<<: *b}\n",
]
NOT_PLAIN = [
    "- !!str 1\n",  # explicit tags
    "x: !!int 3\n",
    "a: *x\n",  # an undefined alias
    "a: &x 1\nb: &x 2\n",  # an anchor defined twice
    "<<: 1\n",  # merging what is not a mapping
    "a: <<\n",  # a merge key as a value
    "{<<: {a: 1}, <<: {b: 2}}",  # two merge keys in one mapping
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


def test_aliases_past_a_bound_are_refused_by_the_full_loaders_check() -> None:
    # not read a second time by the full loader to say the same
    with pytest.raises(LimitError, match=r"the alias \*x is inside the node it refers to"):
        load_plain("a: &x [1, *x]\n")


def test_keys_true_and_1_stay_apart() -> None:
    # Python's dict merged the keys 1 and True before they became text; "1" took the value of true:.
    assert parse_document("1: x\ntrue: t\n", "f.yaml").data == {"1": "x", "true": "t"}


@pytest.mark.parametrize("text", [*PLAIN[:4], CONFIG])
def test_every_key_and_item_is_located_as_the_node_tree_locates_it(text: str) -> None:
    fast = parse_document(text, "f.yaml")
    assert fast.root is None and fast.positions is None  # no node tree, no positions until asked
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


def test_positions_are_read_only_when_a_message_needs_them() -> None:
    document = parse_document(CONFIG, "f.yaml")
    assert document.positions is None and document.text == CONFIG  # read without positions
    assert document.where(("tests", 0, "assert", 0, "value")) == "f.yaml:5:9 tests[0].assert[0].value"
    assert document.positions is not None and document.text is None  # read again once, then kept
    assert document.locate(("tests", 0, "vars", "b", 1)) == "f.yaml:2:25"


def test_a_place_is_put_into_words_once_and_only_when_asked() -> None:
    calls: list[int] = []

    def describe() -> str:
        calls.append(1)
        return "f.yaml:3:5 tests[0]"

    place = Place(describe)
    value, assertion = then(place, ".value"), then(then(place, ".assert"), "[2]")
    assert calls == []
    assert str(assertion) == "f.yaml:3:5 tests[0].assert[2]" and str(value) == "f.yaml:3:5 tests[0].value"
    assert ConfigError("bad", where=place).render() == "f.yaml:3:5 tests[0]: bad"
    assert calls == [1]
    assert then("tests[1]", ".value") == "tests[1].value"


def _write_suite(folder: Path, threshold: str = "") -> Path:
    tests = "".join(
        f"  - vars: {{q: q{i}}}\n    assert:\n      - type: equals\n        value: q{i}\n"
        f"      - type: contains-any\n        value: [q, '{{{{q}}}}']\n"
        for i in range(50)
    )
    (folder / "c.yaml").write_text(
        f"prompts: ['{{{{q}}}}']\nproviders: [echo]\ntests:\n{tests}"
        f"  - vars: {{q: last}}\n    assert:\n      - type: equals\n        value: last\n{threshold}",
        encoding="utf-8",
    )
    return folder / "c.yaml"


def test_a_valid_config_is_loaded_without_locating_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _write_suite(tmp_path)

    def refuse(self: Document, path: tuple[str | int, ...]) -> str:
        raise AssertionError(f"located {path} for a config with no problem")

    monkeypatch.setattr(Document, "locate", refuse)
    suite = load_suite(config)
    assert len(suite.tests) == 51 and suite.tests[3].asserts[1].value == ["q", "q3"]


def test_a_warning_about_a_late_test_is_located_after_the_fast_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = _write_suite(tmp_path, threshold="        threshold: 0.5\n")
    shown: list[str] = []
    with warnings_to(shown.append):
        load_suite(config)
    assert len(shown) == 1
    assert shown[0].startswith("c.yaml:306:9 tests[50].assert[0].threshold: equals has no threshold")


def test_recurring_keys_and_short_texts_are_kept_once() -> None:
    text = "- {type: equals, value: 'case 1'}\n- {type: equals, value: 'case 1'}\n"
    data = parse_document(text, "f.yaml").data
    first, second = (list(item.items()) for item in data)
    assert all(a[0] is b[0] and a[1] is b[1] for a, b in zip(first, second, strict=True))
