"""YAML 1.2 scalars (as js-yaml reads them) and the bounds on nesting, aliases and number sizes."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
import yaml

from evalh.config import safeload
from evalh.config.locate import parse_document
from evalh.config.safeload import MAX_DEPTH, parse_json
from evalh.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e-3", 0.001),
        ("1E5", 100000.0),
        ("-2.5e+2", -250.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("1.", 1.0),
        ("12", 12),
        ("+12", 12),
        ("012", 12),  # YAML 1.2: decimal (YAML 1.1 read it as octal 10)
        ("0o17", 15),
        ("0x1F", 31),
        ("0b101", 5),
        ("1_000", 1000),  # js-yaml allows "_" between digits
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("yes", "yes"),  # YAML 1.1 booleans are text in YAML 1.2 and js-yaml
        ("no", "no"),
        ("on", "on"),
        ("Off", "Off"),
        ("y", "y"),
        ("~", None),
        ("null", None),
        ("NULL", None),
        ("", None),
        ("2024-05-01", "2024-05-01"),  # dates stay text
        ("1_", "1_"),
        ("1:30", "1:30"),  # no sexagesimal numbers
        ("0x", "0x"),
        ("1e", "1e"),
        ("'1e-3'", "1e-3"),  # quoted: text
        ("!!binary aGk=", "aGk="),
    ],
)
def test_scalars_resolve_as_in_yaml_1_2(text: str, expected: Any) -> None:
    value = parse_document(f"key: {text}\n", "x.yaml").data["key"]
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(("text", "check"), [(".inf", math.inf), ("-.Inf", -math.inf), (".NaN", None)])
def test_special_floats_are_read(text: str, check: float | None) -> None:
    value = parse_document(f"key: {text}\n", "x.yaml").data["key"]
    assert (math.isnan(value) if check is None else value == check) and isinstance(value, float)


def test_merge_keys_still_work() -> None:
    data = parse_document("base: &b {a: 1, b: 2}\nother:\n  <<: *b\n  b: 3\n", "x.yaml").data
    assert data["other"] == {"a": 1, "b": 3}


@pytest.mark.parametrize("tag", ["", "!!map "])  # plain: the fast path; a tag: the full loader
def test_of_several_merged_mappings_the_earlier_wins_on_both_paths(tag: str) -> None:
    # the YAML merge spec and js-yaml (promptfoo); PyYAML 6.0.4's own loader let the later one win
    text = f"a: &a {{xx: 1, yy: 1}}\nb: &b {{yy: 2, zz: 2}}\nc: {tag}{{ww: 0, <<: [*a, *b], xx: 3}}\n"
    assert parse_document(text, "x.yaml").data["c"] == {"ww": 0, "xx": 3, "yy": 1, "zz": 2}


def test_a_billion_laughs_is_refused_before_anything_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    text = "\n".join(levels) + "\n"
    assert len(text) < 450
    events = 0
    real_get_event = safeload.SafeLoader.get_event

    def counting_get_event(self: Any) -> Any:
        nonlocal events
        events += 1
        return real_get_event(self)

    def never(self: Any, node: Any) -> Any:
        raise AssertionError("the document was built")

    monkeypatch.setattr(safeload.SafeLoader, "get_event", counting_get_event)
    monkeypatch.setattr(safeload.SafeLoader, "construct_document", never)
    with pytest.raises(ConfigError, match=r"x\.yaml:7:8: aliases \(\*f here\) expand this document"):
        parse_document(text, "x.yaml")
    # the scan stopped at the alias that crossed the bound: a few events, not 9**9 nodes
    assert events < 100


def test_aliases_that_repeat_a_block_in_a_large_suite_are_fine() -> None:
    tests = "\n".join(f"  - vars: {{n: {i}}}\n    assert: *checks" for i in range(2000))
    common = "common: &checks\n  - {type: contains, value: a}\n  - {type: contains, value: b}\n"
    text = f"{common}tests:\n{tests}\n"
    data = parse_document(text, "x.yaml").data
    assert len(data["tests"]) == 2000 and data["tests"][-1]["assert"][1] == {"type": "contains", "value": "b"}


@pytest.mark.parametrize("text", ["&a [*a]", "&a {x: [1, *a]}", "b: &a [1]\nc: &a [*a]\n"])
def test_an_alias_inside_its_own_anchor_is_refused(text: str) -> None:
    # (the last one redefines the anchor: the inner alias is the node being built, a cycle)
    with pytest.raises(ConfigError, match=r"x\.yaml:\d+:\d+: the alias \*a is inside the node it refers to"):
        parse_document(text, "x.yaml")


@pytest.mark.parametrize("style", ["flow", "block"])
def test_nesting_is_bounded(style: str) -> None:
    def nested(depth: int) -> str:  # ``depth`` collections, one inside the other
        if style == "flow":
            return "key: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"
        return "\n".join(" " * level + "-" for level in range(depth)) + "\n"

    assert parse_document(nested(MAX_DEPTH), "x.yaml").data is not None
    with pytest.raises(ConfigError, match=rf"x\.yaml:\d+:\d+: nested deeper than {MAX_DEPTH} levels"):
        parse_document(nested(MAX_DEPTH + 1), "x.yaml")


def test_nesting_far_beyond_the_c_stack_is_refused_without_a_crash() -> None:
    # libyaml's composer recursed until the process died with SIGSEGV at ~50,000 levels
    with pytest.raises(ConfigError, match="nested deeper than"):
        parse_document("[" * 200_000 + "]" * 200_000, "x.yaml")


@pytest.mark.parametrize("text", ["7" * 4001, "-" + "7" * 4001, "0x" + "f" * 3400])
def test_whole_numbers_are_bounded(text: str) -> None:
    with pytest.raises(ConfigError, match=r"x\.yaml:1:6: this whole number has more than 4,000 digits"):
        parse_document(f"key: {text}\n", "x.yaml")
    assert parse_document(f"key: '{text}'\n", "x.yaml").data["key"] == text


def test_json_limits_are_located() -> None:
    with pytest.raises(ConfigError, match=r"^t\.jsonl:3: a whole number has more than 4,000 digits"):
        parse_json('{"n": ' + "9" * 5000 + "}", "t.jsonl", 3)
    with pytest.raises(ConfigError, match=r"^t\.jsonl:2: nested deeper than 100 levels"):
        parse_json("[" * 101 + "]" * 101, "t.jsonl", 2)
    with pytest.raises(ConfigError, match=r"^t\.json:1:101: nested deeper than 100 levels"):
        parse_json("[" * 100_000 + "]" * 100_000, "t.json")  # beyond the json module's recursion
    with pytest.raises(
        ConfigError, match=r"^t\.json:2:7: nested deeper than 2 levels"
    ):  # the bracket of level 3
        parse_json('{"a": "[[[[",\n "b":[[[1]]]}', "t.json", max_depth=2)
    with pytest.raises(ConfigError, match=r"^t\.jsonl:4:7: invalid JSON"):
        parse_json('{"a": }', "t.jsonl", 4)
    assert parse_json("[" * 100 + "]" * 100, "t.json") is not None


def test_a_json_file_that_is_not_yaml_still_loads_but_keeps_the_bounds() -> None:
    # YAML keys are at most 1,024 characters long; JSON's are not: such files are read as JSON
    key = "k" * 1100
    assert parse_document(f'{{"{key}": 1}}', "t.json", json_fallback=True).data == {key: 1}
    with pytest.raises(ConfigError, match=r"t\.json:1:\d+: nested deeper"):
        parse_document(f'{{"{key}": ' + "[" * 200 + "]" * 200 + "}", "t.json", json_fallback=True)


def test_the_yaml_module_default_is_untouched() -> None:
    # evalh's loader is its own class: other users of PyYAML in the process keep YAML 1.1
    assert yaml.safe_load("key: yes") == {"key": True}


@pytest.mark.parametrize(
    ("tagged", "problem"),
    [
        ("!!set null", "expected a mapping node, but found scalar"),
        ("!!set [a]", "expected a mapping node, but found sequence"),
        ("!!int abc", "'abc' is not a whole number"),
        ('!!int ""', "'' is not a whole number"),
        ("!!float x", "'x' is not a number"),
        ("!!bool maybe", "'maybe' is not true or false"),
        ("!!str [a]", "expected a scalar node"),
        ("!!python/object:os.system x", "could not determine a constructor"),
    ],
)
def test_explicit_tags_that_do_not_fit_are_located_errors(tagged: str, problem: str) -> None:
    # found by the fuzz test: `!!set null` and `!!int abc` ended as internal errors
    with pytest.raises(ConfigError, match=rf"^x\.yaml:1:6: invalid YAML: {re.escape(problem)}"):
        parse_document(f"key: {tagged}\n", "x.yaml")
