"""The row identity's digest stays the sha256 of ``json.dumps(identity, sort_keys=True, ensure_ascii=False,
default=str)``: stored runs are compared by it, so a faster encoder must write that exact text."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
import types
from collections.abc import Mapping
from typing import Any

import pytest

from evalh.store.identity import _digest, cell_key, row_key

_SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    -7,
    2**70,
    1.5,
    1e-05,
    1e16,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "plain",
    "é ü 中文 🙂",
    'quote " backslash \\ tab \t newline \n nul \x00 del \x7f',
    "\u2028\u2029",
    "lone \udcff surrogate",
    dt.date(2026, 11, 28),
    {1, 2},
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 3 else 4)
    if kind < 4:
        return rng.choice(_SCALARS)
    if kind == 4:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = rng.sample(["b", "a", "é", "Z", "vars", "10", "9", " ", "\U0001f642", "aa"], rng.randrange(5))
    return {key: _value(rng, depth + 1) for key in keys}


def _expected(identity: Any) -> str:
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_the_digest_is_that_of_json_dumps_sorted_on_varied_values() -> None:
    rng = random.Random(29)
    for _ in range(2000):
        identity = {
            "description": _value(rng),
            "vars": _value(rng),
            "prompt": _value(rng),
            "provider": _value(rng),
            "repeat": rng.randrange(3),
        }
        assert _digest(identity) == _expected(identity)


def test_row_and_cell_keys_are_those_of_the_canonical_text() -> None:
    row = {
        "description": "t1 é",
        "vars": {"b": [1.0, 1e-05, {"z": None, "a": "x"}], "a": "\u00e9\n"},
        "prompt": {"raw": "r", "label": "p"},
        "provider": {"id": "echo", "label": ""},
        "testIdx": 3,
        "repeatIdx": 2,
    }
    identity = {"description": "t1 é", "vars": row["vars"], "prompt": "p", "provider": "echo"}
    assert cell_key(row) == _expected(identity)
    assert row_key(row) == _expected({**identity, "repeat": 2})


def test_what_json_dumps_refuses_is_refused_alike() -> None:
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    with pytest.raises(ValueError, match="Circular reference"):
        _digest({"vars": looped})
    with pytest.raises(TypeError):  # keys json cannot sort
        _digest({"vars": {1: "a", "b": 2}})
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        _digest({"vars": deep})


_LABELS: list[Any] = [None, "", "p", 0, 3, [], ["x"], {}, {"k": 1}]


def _part(rng: random.Random, first: str, then: str) -> Any:
    """A row's prompt or provider: a dict (or a read-only mapping) with its keys set, falsy or absent,
    or a value that is no mapping."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(_LABELS)
    part = {key: rng.choice(_LABELS) for key in (first, then, "other") if rng.random() < 0.7}
    return types.MappingProxyType(part) if kind == 1 else part


def _chosen(part: Any, first: str, then: str) -> Any:
    """The rule: a mapping's first key set (truthy), else its second, else None; any other value itself."""
    if not isinstance(part, Mapping):
        return part
    found = [part[key] for key in (first, then) if part.get(key)]
    return found[0] if found else None


def test_the_prompt_and_provider_named_are_the_rules_on_varied_rows() -> None:
    rng = random.Random(5)
    for _ in range(1000):
        row = {
            "description": rng.choice(("d", None, "")),
            "vars": {"q": rng.choice(("a", 1))},
            "prompt": _part(rng, "label", "raw"),
            "provider": _part(rng, "label", "id"),
            "repeatIdx": rng.randrange(3),
        }
        identity = {
            "description": row["description"] or None,
            "vars": row["vars"],
            "prompt": _chosen(row["prompt"], "label", "raw"),
            "provider": _chosen(row["provider"], "label", "id"),
        }
        assert cell_key(row) == _expected(identity)
        assert row_key(row) == _expected({**identity, "repeat": row["repeatIdx"]})
