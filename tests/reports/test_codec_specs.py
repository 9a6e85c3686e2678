"""The fast paths of a row's conversion give what the general ones give.

- ``redact_config`` of a dict decides "nothing to redact here" without its walk (``_holds_nothing``):
  for every dict, at every depth, of varied configs (secret keys, ``env`` maps, URLs with passwords,
  registered secret values with a quote and an accent, numbers of every kind, nested values), the
  answer and its identity are the walk's.
- Rows converted with one memo (tests sharing specs, secrets registered) are those converted one by
  one, their ``testCase.assert`` items the walk's redaction of each spec as written, and a secret
  registered between two rows is redacted in the second.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

from evalh import secrets
from evalh.model import AssertionSpec, GradedAssertion, TestCase, TestResult
from evalh.reports.codec import new_memo, result_to_json
from evalh.reports.streamed import encode_row
from evalh.secrets import MARKER, redact_config, register, run_registry
from tests.reports.sample import passed_row

SECRET = 'pa"ss-wörd-123'  # a quote and an accent: its JSON forms differ from it
URL_SECRET = "https://user:hunter2-pw@example.com/v1?sig=abcdef&q=1"
KEYS = (
    "type",
    "value",
    "threshold",
    "weight",
    "metric",
    "apiKey",
    "env",
    "config",
    "provider",
    "url",
    "tags",
)
LEAVES: tuple[Any, ...] = (
    "contains",
    "short",
    "a longer sentence without anything secret in it",
    f"holds {SECRET} inside",
    SECRET,
    URL_SECRET,
    "see http://example.com/plain",
    "",
    0,
    1,
    -0.0,
    1.0,
    math.nan,
    math.inf,
    True,
    False,
    None,
)


def _value(rng: random.Random, depth: int) -> Any:
    pick = rng.random()
    if depth < 3 and pick < 0.15:
        return _mapping(rng, depth + 1)
    if depth < 3 and pick < 0.25:
        items = [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
        return items if rng.random() < 0.5 else tuple(items)
    return rng.choice(LEAVES)


def _mapping(rng: random.Random, depth: int = 0) -> dict[Any, Any]:
    keys = rng.sample(KEYS, rng.randrange(1, 5))
    out: dict[Any, Any] = {key: _value(rng, depth) for key in keys}
    if rng.random() < 0.05:
        out[7] = "a key that is not a string"
    return out


def _dicts(value: Any) -> Iterator[dict[Any, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _dicts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _dicts(item)


def _walked(value: dict[Any, Any]) -> Any:
    return secrets._redact_mapping(value, True)  # the general walk, the fast path's reference


def test_the_fast_answer_for_a_dict_is_the_walks_at_every_depth() -> None:
    rng = random.Random(29)
    configs = [_mapping(rng) for _ in range(3000)]
    checked = kept = 0
    for registered in (False, True):
        with run_registry():
            if registered:
                register(SECRET)
            for config in configs:
                for found in _dicts(config):
                    fast, walked = redact_config(found), _walked(found)
                    assert repr(fast) == repr(walked), found
                    assert (fast is found) == (walked is found), found
                    checked += 1
                    kept += fast is found
    assert kept and checked - kept  # both answers were given


class _Name(str):
    """A key that is a string of another type: the walk writes it as a plain string (a copy)."""


def test_a_key_of_a_str_subclass_goes_to_the_walk_even_after_the_same_plain_key() -> None:
    plain, subclassed = {"type": "contains"}, {_Name("type"): "contains"}
    assert redact_config(plain) is plain
    assert redact_config(subclassed) is not subclassed
    assert redact_config(subclassed) == _walked(subclassed)


def test_a_registered_value_in_a_plain_dict_is_redacted() -> None:
    raw = {"type": "contains", "value": f"say {SECRET}"}
    assert redact_config(raw) is raw  # nothing registered: the dict itself
    with run_registry():
        register(SECRET)
        assert redact_config(raw) == {"type": "contains", "value": f"say {MARKER}"}


def _spec(kind: str, value: Any, **raw_extra: Any) -> AssertionSpec:
    return AssertionSpec(type=kind, value=value, raw={"type": kind, "value": value, **raw_extra})


def _row(index: int, specs: tuple[AssertionSpec, ...]) -> TestResult:
    test = TestCase(index=index, description=f"case {index}", vars={"q": f"question {index}"}, asserts=specs)
    graded = tuple(
        GradedAssertion(spec=spec, passed=True, score=1.0, reason=f"reason {at}")
        for at, spec in enumerate(specs)
    )
    return passed_row(test, graded)


def _varied_specs(rng: random.Random) -> list[AssertionSpec]:
    specs = []
    for at in range(40):
        raw = _mapping(rng)
        value = raw.get("value")
        threshold = rng.choice((None, 0.5, 1, 10.0))
        spec = AssertionSpec(
            type=rng.choice(("contains", "not-icontains", "equals", "similar")),
            value=value,
            threshold=threshold,
            weight=rng.choice((1.0, 2.0, 0.0)),
            metric=rng.choice((None, "m", "")),
            raw={"type": "x", **raw},
        )
        if at % 10 == 9:  # an assert-set of two earlier specs
            spec = AssertionSpec(type="assert-set", children=tuple(specs[-2:]), raw={"type": "assert-set"})
        specs.append(spec)
    return specs


def test_rows_converted_with_one_memo_are_those_converted_alone() -> None:
    rng = random.Random(7)
    specs = _varied_specs(rng)
    # tests share specs (as a suite whose building shares equal assertions would)
    rows = [_row(index, tuple(rng.sample(specs, rng.randrange(1, 6)))) for index in range(400)]
    with run_registry():
        register(SECRET)
        register(*secrets.url_secrets(URL_SECRET))
        memo = new_memo()
        for row in rows:
            shared, alone = encode_row(row, memo), encode_row(row)
            assert shared.text == alone.text
            assert repr(shared.document) == repr(alone.document)


def test_a_secret_registered_between_rows_is_redacted_in_a_shared_specs_later_rows() -> None:
    spec = _spec("contains", f"the {SECRET} here")
    memo = new_memo()
    with run_registry():
        first = result_to_json(_row(0, (spec,)), memo=memo)
        assert first["testCase"]["assert"][0]["value"] == f"the {SECRET} here"
        register(SECRET)
        later = result_to_json(_row(1, (spec,)), memo=memo)
        assert later["testCase"]["assert"][0]["value"] == f"the {MARKER} here"
        assert SECRET not in encode_row(_row(2, (spec,)), memo).text
