"""defaultTest's assertions that no test's vars go into are built once and shared by every test (the same
spec objects); those rendered with a test's vars are each test's own. Either way a test's specs equal
what building each test alone makes, and a problem in a shared one is said once, where it was written."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from evalh.config.build import Defaults
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import AssertionSpec
from tests.config.conftest import WriteFiles

_CONFIG = """
prompts: ["{{q}}"]
providers: [echo]
defaultTest:
  assert:
%s
tests:
  - vars: {q: one, expected: "1"}
    assert: [{type: contains, value: one}]
  - vars: {q: two, expected: "2"}
  - vars: {q: three, expected: "3"}
    assert: [{type: equals, value: "{{q}}"}]
"""


def _same(one: AssertionSpec, other: AssertionSpec) -> bool:
    return all(getattr(one, spec.name) == getattr(other, spec.name) for spec in fields(AssertionSpec))


def test_plain_default_assertions_are_one_spec_for_every_test(project: WriteFiles) -> None:
    asserts = """    - {type: icontains, value: "O"}
    - {type: levenshtein, value: abc, threshold: 5, weight: 2}
    - {type: contains-any, value: [a, "b{"]}
    - {type: regex, value: "^[a-z]{2}$"}"""
    tests = load_suite(project(_CONFIG % asserts)).tests
    first = tests[0].asserts[:4]
    for test in tests[1:]:
        assert all(mine is theirs for mine, theirs in zip(test.asserts[:4], first, strict=True))
    assert [spec.path for spec in first] == [f"defaultTest.assert[{index}]" for index in range(4)]
    assert (first[1].threshold, first[1].weight, first[2].value) == (5.0, 2.0, ["a", "b{"])
    assert first[3].value == "^[a-z]{2}$"
    # each test's own assertions follow, as before
    assert [len(test.asserts) for test in tests] == [5, 4, 5]
    assert tests[2].asserts[4].value == "three"


@pytest.mark.parametrize(
    "rendered",
    [
        '    - {type: equals, value: "{{expected}}"}',  # a template
        "    - {type: equals, value: x, metric: m}",  # a key the short path does not take
        '    - {type: icontains-any, value: ["{{q}}", b]}',  # a template in a list
        "    - {type: is-json}",  # no value
    ],
)
def test_default_assertions_a_test_may_change_are_its_own(project: WriteFiles, rendered: str) -> None:
    asserts = f"    - {{type: contains, value: t}}\n{rendered}"
    tests = load_suite(project(_CONFIG % asserts)).tests
    for test in tests[1:]:
        assert test.asserts[0] is not tests[0].asserts[0]  # all of them built for each test, as before
        assert _same(test.asserts[0], tests[0].asserts[0])
    if "{{" in rendered:
        assert [test.asserts[1].value for test in tests][:2] in (["1", "2"], [["one", "b"], ["two", "b"]])


def test_a_problem_in_a_shared_default_assertion_is_said_once_where_it_is(project: WriteFiles) -> None:
    """The message main gave when each test had its own copy: one problem, at the place in the file."""
    asserts = """    - {type: contains, value: fine}
    - {type: regex, value: "(unclosed"}
    - {type: icontains, value: x, threshold: 0.5}"""
    config = project(_CONFIG % asserts)
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert str(caught.value) == (
        f"{config}:7:7 defaultTest.assert[1].value: regex: invalid regular expression: missing ) at "
        "position 9 (Python re syntax)"
    )


def test_a_defaults_made_for_another_default_test_shares_nothing_of_the_first(project: WriteFiles) -> None:
    """An extension's beforeAll (or the load) makes a new Defaults by replace(): the specs built for the
    old defaultTest must not serve the new one."""
    old = Defaults(data={"assert": [{"type": "contains", "value": "old"}]})
    old.shared_asserts.append([AssertionSpec(type="contains", value="old")])
    new = replace(old, data={"assert": [{"type": "contains", "value": "new"}]})
    assert new.shared_asserts == [] and len(old.shared_asserts) == 1
