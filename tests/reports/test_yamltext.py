"""The YAML emitter: what yaml.safe_load reads back must equal what was written."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import yaml

from evalh.reports.json import to_promptfoo_json
from evalh.reports.yamltext import to_yaml_text
from tests.reports.sample import sample_run

TRICKY = [
    "",
    "plain",
    "yes",
    "No",
    "NULL",
    "~",
    "true",
    "on",
    "1.5",
    "0x1F",
    "1e3",
    ".inf",
    "- a",
    "a: b",
    "a:b",
    "#c",
    "x #y",
    "@at",
    "`tick`",
    "'single'",
    '"double"',
    " lead",
    "trail ",
    "multi\nline\n",
    "tab\there",
    "cr\rlf",
    "bell\x07",
    "del\x7f",
    "nel\x85",
    "ls\u2028ps\u2029",
    "bom\ufeff",
    "ünïcödé 日本 😀",
    "{flow}",
    "[seq]",
    "&anchor",
    "*alias",
    "!tag",
    "%dir",
    "|",
    ">",
    "?",
    "<<",
    "a/b.c-d_e",
    "hello world",
    "a, b",
    "don't",
    "x = y",
    "what?",
    "(paren)",
    "end ",
    "Yes please",
    "a  ",
    "k: v, w",
    "q #r",
]
NUMBERS: list[Any] = [0, -1, 10**20, 0.5, -2.25, 1e-05, 1e20, 3.0, True, False, None]


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice(TRICKY + NUMBERS)
    if roll < 0.75:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {rng.choice(TRICKY): _random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}


@pytest.mark.parametrize("seed", range(30))
def test_random_documents_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    document = {f"k{i}": _random_value(rng, 0) for i in range(8)}
    assert yaml.safe_load(to_yaml_text(document)) == document


@pytest.mark.parametrize("value", [*TRICKY, *NUMBERS, [], {}, [[]], [{}], {"a": []}])
def test_single_values_round_trip(value: Any) -> None:
    assert yaml.safe_load(to_yaml_text({"v": value})) == {"v": value}
    assert yaml.safe_load(to_yaml_text([value])) == [value]


def test_special_floats_and_top_level_scalars() -> None:
    loaded = yaml.safe_load(to_yaml_text({"nan": math.nan, "inf": math.inf, "ninf": -math.inf}))
    assert math.isnan(loaded["nan"]) and loaded["inf"] == math.inf and loaded["ninf"] == -math.inf
    assert yaml.safe_load(to_yaml_text("yes")) == "yes"
    assert to_yaml_text({}) == "{}\n" and to_yaml_text([]) == "[]\n"


def test_long_keys_and_tuples() -> None:
    document = {"k" * 2000: (1, 2), "nested": {"t": ("a", {"b": None})}}
    assert yaml.safe_load(to_yaml_text(document)) == {"k" * 2000: [1, 2], "nested": {"t": ["a", {"b": None}]}}


def test_lone_surrogate_written_as_text() -> None:
    assert yaml.safe_load(to_yaml_text({"s": "a\udcffb"})) == {"s": "a\\udcffb"}


def test_block_style_is_readable() -> None:
    text = to_yaml_text({"results": [{"id": "row-1", "pass": True, "vars": {"q": "What is 2+2?"}}]})
    assert text == 'results:\n  - id: row-1\n    pass: true\n    vars:\n      q: "What is 2+2?"\n'


def test_report_round_trips() -> None:
    document = to_promptfoo_json(sample_run())
    loaded = yaml.safe_load(to_yaml_text(document))
    assert loaded["results"]["stats"] == document["results"]["stats"]
    assert loaded["results"]["results"][4] == document["results"]["results"][4]
