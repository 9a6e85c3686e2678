"""The short path of building an assertion (only type, value, threshold and weight written) makes the
same spec as the general path and as the spec's own __init__."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from evalh.config.load import load_suite
from evalh.model import AssertionSpec, TestCase
from tests.config.conftest import WriteFiles

_CASES: list[tuple[str, bool, Any, float | None, float]] = [
    ("contains", False, "x", None, 1.0),
    ("not-contains", True, ["a", "b"], None, 2.0),
    ("levenshtein", False, "The robot", 10.0, 0.5),
    ("is-json", False, None, None, 1.0),
    ("not-equals", True, {"k": [1, 2]}, 0.25, 0.0),
    ("regex", False, 3, None, 1.0),
]


@pytest.mark.parametrize(("written", "negate", "value", "threshold", "weight"), _CASES)
def test_plain_spec_is_the_keyword_spec(
    written: str, negate: bool, value: Any, threshold: float | None, weight: float
) -> None:
    raw = {"type": written, "value": value}
    config: dict[str, Any] = {}
    made = AssertionSpec.plain(written, negate, value, threshold, weight, config, raw, "tests[2].assert[5]")
    keyword = AssertionSpec(
        type=written.removeprefix("not-"),  # the __init__ spells the negation itself
        negate=negate,
        value=value,
        threshold=threshold,
        weight=weight,
        config=config,
        raw=raw,
        path="tests[2].assert[5]",
    )
    assert made == keyword and repr(made) == repr(keyword)
    for spec_field in fields(AssertionSpec):  # every field set (reading an unset slot raises)
        mine, theirs = getattr(made, spec_field.name), getattr(keyword, spec_field.name)
        assert type(mine) is type(theirs) and mine == theirs


def test_plain_assertions_build_as_the_general_path_builds_them(project: WriteFiles) -> None:
    asserts = """
      - {type: equals, value: "{{expected}}"}
      - {type: not-contains, value: robot}
      - {type: icontains-any, value: ["{{expected}}", plain, "x{{n}}"]}
      - {type: levenshtein, value: "{{expected}}", threshold: 10}
      - {type: not-icontains, value: ROBOT, weight: 2}
      - {type: regex, value: "^[A-Z{][^\\\\n]*[.}]$", threshold: 0.5, weight: 0}
      - {type: is-json}
      - {type: contains-json, value: {"type": "object"}}
      - {type: starts-with, value: "{{ n }} {{ expected | upper }}"}
      - {type: contains-all, value: ["{a}", "b{", "{{ n }}{"]}
      - {type: contains, value: "{# a note #}kept"}
      - {type: contains-any, value: ["{a}", "b{"]}
"""
    body = """
prompts: ["{{expected}}"]
providers: [echo]
tests:
  - vars: {expected: The robot, n: 3}
    assert:%s
"""
    plain = load_suite(project(body % asserts), report_config=False).tests[0].asserts
    # an assertion with any other key takes build_assertion's general path: ``config: {}`` changes nothing
    general_text = asserts.replace("}\n", ", config: {}}\n").replace(
        "{type: is-json}", "{type: is-json, config: {}}"
    )
    general = load_suite(project(body % general_text), report_config=False).tests[0].asserts
    assert len(plain) == len(general) == 12
    assert [spec.value for spec in plain[9:]] == [["{a}", "b{", "3{"], "kept", ["{a}", "b{"]]
    assert all(spec.config == {} and "config" not in spec.raw for spec in plain)
    for short, long in zip(plain, general, strict=True):
        assert short == replace(long, raw=short.raw, config=short.config)


def test_a_test_made_is_the_keyword_test() -> None:
    """TestCase.made sets each field from its own argument (distinct values: a field set from another's
    shows)."""
    values: dict[str, Any] = {
        "index": 7,
        "description": "d",
        "vars": {"v": 1},
        "asserts": (AssertionSpec(type="contains", value="x"),),
        "threshold": 0.5,
        "options": {"o": 2},
        "provider": None,
        "metadata": {"m": 3},
        "output": "out",
        "has_output": True,
        "path": "tests[7]",
        "prompts": ("p",),
        "providers": ("q",),
        "late_vars": frozenset({"late"}),
        "stand_in": None,
        "scoring_function": "file://score.py",
    }
    assert list(values) == [test_field.name for test_field in fields(TestCase)]
    made, keyword = TestCase.made(**values), TestCase(**values)
    assert made == keyword and repr(made) == repr(keyword)
    for test_field in fields(TestCase):  # every field set (reading an unset slot raises)
        assert getattr(made, test_field.name) is values[test_field.name]


def _made_pairs() -> list[tuple[Any, Any]]:
    raw = {"type": "not-contains", "value": "x"}
    spec = AssertionSpec.plain("not-contains", True, "x", 0.5, 2.0, {}, raw, "tests[0].assert[0]")
    keyword_spec = AssertionSpec(
        type="contains", negate=True, value="x", threshold=0.5, weight=2.0, raw=raw, path="tests[0].assert[0]"
    )
    test = TestCase.made(
        3,
        "d",
        {"a": "b"},
        (spec,),
        None,
        {},
        None,
        {},
        None,
        False,
        "tests[3]",
        None,
        None,
        frozenset(),
        None,
        None,
    )
    keyword_test = TestCase(
        index=3, description="d", vars={"a": "b"}, asserts=(keyword_spec,), path="tests[3]"
    )
    return [(spec, keyword_spec), (test, keyword_test)]


@pytest.mark.parametrize(("made", "keyword"), _made_pairs())
def test_a_fast_made_object_is_the_frozen_class_itself(made: Any, keyword: Any) -> None:
    """The fast constructors fill a draft of the same slots and make it the class (model/suite.py
    _draft_of): what they give is the frozen dataclass in every way its __init__'s is."""
    import copy
    import pickle
    from dataclasses import FrozenInstanceError

    assert type(made) is type(keyword) and not hasattr(made, "__dict__")
    assert made == keyword and repr(made) == repr(keyword)
    with pytest.raises(FrozenInstanceError):
        made.path = "elsewhere"
    assert pickle.loads(pickle.dumps(made)) == keyword and copy.copy(made) == keyword
    assert replace(made, path="p") == replace(keyword, path="p")
    for value in (made, keyword):  # hashed as the dataclass hashes (its dict fields refuse)
        with pytest.raises(TypeError, match="unhashable type: 'dict'"):
            hash(value)
