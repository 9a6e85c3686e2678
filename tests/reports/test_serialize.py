"""Report JSON text: what ``json.dumps`` gives for every value a report holds, and its error for a cycle;
the compact form of the rows and the JSON report (orjson's), beside a value orjson refuses too."""

from __future__ import annotations

import json
import math
from types import MappingProxyType

import orjson
import pytest

from evalh.reports.serialize import compact, dumps


def test_shared_values_are_written_in_full_wherever_they_appear() -> None:
    shared = {"q": "café ☕", "list": [1, 2.5, {"deep": [None, True]}]}
    document = {"vars": shared, "testCase": {"vars": shared, "assert": [shared, shared]}, "score": 0.25}
    assert dumps(document) == json.dumps(document, ensure_ascii=False)


def test_nan_is_null_in_a_value_with_shared_parts() -> None:
    shared = {"score": math.nan}
    assert dumps({"a": shared, "b": [shared]}) == '{"a": {"score": null}, "b": [{"score": null}]}'


@pytest.mark.parametrize("wrap", [dict, MappingProxyType], ids=["dict", "mapping"])
def test_a_cycle_is_named_as_json_dumps_names_it(wrap: type) -> None:
    inner: dict[str, object] = {}
    inner["self"] = wrap(inner) if wrap is MappingProxyType else inner
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps({"row": [inner]})


# -- compact: orjson's form, for the rows, the JSON report and the run store ----------------------------


_ROW_LIKE = {
    "score": 1e-05,
    "tiny": 3e-07,
    "big": 1e16,
    "nan": math.nan,
    "text": 'café \x07 \u2028 "quoted"',
    1: "an integer key",
    "nested": [{"pass": True, "value": None}, 2.5],
}


def test_compact_text_is_orjsons_and_reads_back_as_json_dumps_values() -> None:
    text = compact(_ROW_LIKE)
    assert text == orjson.dumps(_ROW_LIKE, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    assert json.loads(text) == json.loads(json.dumps(_ROW_LIKE, ensure_ascii=False).replace("NaN", "null"))


def _deep(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "refused",
    ["lone \udcff surrogate", 2**70, _deep(300)],  # nesting deeper than orjson's 254 levels
    ids=["surrogate", "huge-int", "deep"],
)
def test_a_value_orjson_refuses_leaves_its_neighbours_in_orjsons_form(refused: object) -> None:
    alone = compact(_ROW_LIKE)
    beside = compact([_ROW_LIKE, refused])
    assert beside.startswith(f"[{alone},")
    assert json.loads(beside)[1] == refused
    beside.encode("utf-8")  # valid UTF-8: a lone surrogate is written as its escape


def test_a_cycle_is_named_in_the_compact_form_too() -> None:
    inner: dict[str, object] = {}
    inner["self"] = inner
    with pytest.raises(ValueError, match="Circular reference detected"):
        compact({"row": [inner]})


class _Score(float):
    """A float subclass, as a user's scorer or a library may return: still a number in JSON."""


@pytest.mark.parametrize("value", [_Score(0.5), [_Score(2.0), {"s": _Score(-1.25)}], {"x": _Score(math.inf)}])
def test_a_float_subclass_is_the_same_number_in_the_compact_and_the_indented_form(value: object) -> None:
    assert json.loads(compact(value)) == json.loads(dumps(value))
    assert '"' not in compact(value).replace('"s"', "").replace('"x"', "")
