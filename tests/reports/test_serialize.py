"""Report JSON text: what ``json.dumps`` gives for every value a report holds, and its error for a cycle."""

from __future__ import annotations

import json
import math
from types import MappingProxyType

import pytest

from evalh.reports.serialize import dumps


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
