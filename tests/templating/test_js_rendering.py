"""Values inserted into templates print as Nunjucks prints them, JavaScript's way (issue 27).

Every expected text below is what Nunjucks 3 (promptfoo 0.123's engine) renders for the same template
and values, checked with Node: a list is ``1,2,3``, an object ``[object Object]``, numbers as JavaScript
writes them; ``dump`` stays JSON.stringify, and grading prompts see objects as JSON.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from evalh.assertions.judge_prompts import render_messages
from evalh.common.environment import overlaid
from evalh.templating import grading_scope, render_template
from evalh.templating.nunjucks import js_number

VALUES: dict[str, Any] = {
    "numbers": [1, 2, 3],
    "words": ["a", "b"],
    "nested": [1, [2, [3, 4]]],
    "obj": {"name": "Ada", "tags": [1]},
    "objects": [{"a": 1}, {"b": 2}],
    "nothing": None,
    "flags": [True, False, None],
    "whole": 1.0,
    "sum": 0.1 + 0.2,
    "empty": [],
    "mixed": [1, "x", {"a": 1}, [2, 3], None],
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ numbers }}", "1,2,3"),
        ("{{ words }}", "a,b"),
        ("{{ nested }}", "1,2,3,4"),
        ("{{ obj }}", "[object Object]"),
        ("{{ objects }}", "[object Object],[object Object]"),
        ("[{{ nothing }}]", "[]"),
        ("{{ flags }}", "true,false,"),
        ("{{ whole }} {{ sum }}", "1 0.30000000000000004"),
        ("[{{ empty }}]", "[]"),
        ("{{ mixed }}", "1,x,[object Object],2,3,"),
        ("list={{ numbers }}", "list=1,2,3"),  # the same inside text as alone
        # the real values stay one step away: fields, items, loops, filters
        ("{{ obj.name }} {{ obj.tags }} {{ numbers[0] }} {{ numbers | length }}", "Ada 1 1 3"),
        ("{% for n in numbers %}[{{ n }}]{% endfor %}", "[1][2][3]"),
        ("{{ obj | dump }} {{ numbers | dump }} {{ whole | dump }}", '{"name":"Ada","tags":[1]} [1,2,3] 1'),
        (
            '{{ numbers | join(", ") }}|{{ objects | join(", ") }}|{{ flags | join("-") }}',
            "1, 2, 3|[object Object], [object Object]|true-false-",
        ),
        ('{{ objects | join(",", "a") }}', "1,"),
        ("{{ 'n=' ~ numbers }} {{ numbers | string }} {{ obj | string }}", "n=1,2,3 1,2,3 [object Object]"),
        ("{{ numbers | reverse }} {{ obj | dictsort }}", "3,2,1 name,Ada,tags,1"),
        (
            "{{ 'a' ~ nothing }} {{ 'b' ~ missing }} {{ 'c' ~ flags ~ whole }}",
            "anull bundefined ctrue,false,1",
        ),
        ("{{ 10 / 4 }} {{ 2 ** 70 }}", "2.5 1.1805916207174113e+21"),
    ],
)
def test_values_print_as_nunjucks_prints_them(template: str, expected: str) -> None:
    assert render_template(template, VALUES, where="w") == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (1, "1"),
        (1.0, "1"),
        (-5.5, "-5.5"),
        (100.0, "100"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (0.000001, "0.000001"),
        (0.00001, "0.00001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (-0.0, "0"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (12345678901234567890, "12345678901234567000"),  # held as a double, as JavaScript holds it
    ],
)
def test_numbers_are_written_as_javascript_writes_them(number: float, expected: str) -> None:
    assert js_number(number) == expected
    assert render_template("{{ n }}", {"n": number}, where="w") == expected


def test_a_grading_prompt_sees_objects_as_json_as_promptfoo_gives_them() -> None:
    variables = {"obj": {"a": 1.0}, "items": [1, {"b": 2}, [3]], "text": "t", "vars": {"obj": {"a": 1}}}
    scope = grading_scope(variables)
    expected = {"obj": '{"a":1}', "items": [1, '{"b":2}', "[3]"], "text": "t", "vars": {"obj": '{"a":1}'}}
    assert scope == expected
    assert variables["obj"] == {"a": 1.0}  # the caller's values are left as they were
    template = [{"role": "user", "content": "{{ obj }} | {{ items }} | {{ vars.obj }} | {{ output }}"}]
    messages = render_messages(template, {**variables, "output": "out"})
    assert messages[0]["content"] == '{"a":1} | 1,{"b":2},[3] | {"a":1} | out'


def test_promptfoos_switch_keeps_objects_in_grading_prompts() -> None:
    with overlaid({"PROMPTFOO_DISABLE_OBJECT_STRINGIFY": "true"}):
        scope = grading_scope({"obj": {"a": 1}})
        messages = render_messages([{"role": "user", "content": "{{ obj.a }} {{ obj }}"}], scope)
    assert scope == {"obj": {"a": 1}}
    assert messages[0]["content"] == "1 [object Object]"


def test_a_template_reads_a_lists_or_a_texts_length_as_javascript_does() -> None:
    # promptfoo's multi-turn example: completion.prompt[completion.prompt.length - 1].content
    variables = {"turns": [{"content": "a"}, {"content": "b"}], "text": "abc", "config": {"length": "brief"}}
    template = (
        "{{ turns[turns.length - 1].content }} {{ turns.length }} {{ text.length }} {{ config.length }}"
    )
    assert render_template(template, variables, where="w") == "b 2 3 brief"
