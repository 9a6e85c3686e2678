"""A row's components and their ``assertion`` forms, as the codec writes them, are what the rule says.

The conversion of a spec (``_assertion_to_json``: the spec as written, redacted, with the type, the
rendered value and the figures that apply; a figure written as null left out) and of a graded assertion
(``_component_to_json``: its verdict, a copy of its details, its error / skipped / usage / children, a
javascript or python assertion's own ``componentResults`` listed after it) take shortcuts for the usual
case (no figure written as null, no details). Checked against the rule written out plainly below, on
varied specs and graded assertions (figures null or set, weights, metrics, values of every JSON kind,
registered secrets, empty and non-empty details, returned components as a list and as something else,
assert-sets): every row's components are the rule's, and a row's details are never the graded
assertion's own mapping.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from evalh.model import RETURNED_COMPONENTS, AssertionSpec, GradedAssertion, TestCase, TestResult, Usage
from evalh.reports.codec import new_memo, result_to_json, usage_to_json
from evalh.secrets import MARKER, redact_config, register, run_registry
from tests.reports.sample import passed_row

SECRET = 'pa"ss-wörd-123'
VALUES: tuple[Any, ...] = (
    None,
    "plain",
    f"holds {SECRET}",
    "",
    0,
    2.5,
    True,
    ["a", SECRET],
    {"nested": SECRET, "apiKey": "sk-abcdefgh12345678"},
    {"k": 1},
)
FIGURES = ("threshold", "weight", "metric")


def _rule_assertion(spec: AssertionSpec) -> dict[str, Any]:
    """A component's ``assertion`` by the rule: the spec as written (redacted), figures written as null
    left out, the type, the rendered value (redacted when a mapping not taken as written), the figures
    that apply."""
    written = redact_config(spec.raw) if spec.raw else None
    out: dict[str, Any] = dict(written) if written else {}
    out["type"] = spec.type
    for key in FIGURES:
        if key in out and out[key] is None:
            del out[key]
    value = spec.value
    if isinstance(value, Mapping):
        if not written or spec.raw.get("value") is not value:
            out["value"] = redact_config(value)
    elif value is not None:
        out["value"] = value
    applies = {
        "threshold": spec.threshold is not None,
        "weight": spec.weight != 1.0 or "weight" in out,  # a weight written is always shown
        "metric": bool(spec.metric),
    }
    out.update((key, getattr(spec, key)) for key, shown in applies.items() if shown)
    return out


def _rule_components(graded: tuple[GradedAssertion, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in graded:
        metadata = dict(item.details)
        component: dict[str, Any] = {
            "pass": item.passed,
            "score": item.score,
            "reason": item.reason,
            "assertion": _rule_assertion(item.spec),
            "metadata": metadata,
        }
        # error and skipped only when true, the grading's tokens only when it used any
        component.update((key, True) for key, on in (("error", item.error), ("skipped", item.skipped)) if on)
        component.update(() if item.usage is None else [("tokensUsed", usage_to_json(item.usage))])
        nested: list[dict[str, Any]] | None = None
        if item.children:
            nested = _rule_components(item.children)
        elif isinstance(metadata.get(RETURNED_COMPONENTS), list):
            returned = metadata.pop(RETURNED_COMPONENTS)
            parent = component["assertion"]
            nested = [{**sub, "assertion": sub.get("assertion") or parent} for sub in returned]
        elif RETURNED_COMPONENTS in metadata:
            del metadata[RETURNED_COMPONENTS]
        if nested is not None:
            component["componentResults"] = nested
        out.append(component)
        out.extend(nested or ())
    return out


def _spec(rng: random.Random, at: int, earlier: list[AssertionSpec]) -> AssertionSpec:
    if at % 9 == 8 and len(earlier) >= 2:
        return AssertionSpec(type="assert-set", children=tuple(earlier[-2:]), raw={"type": "assert-set"})
    value = rng.choice(VALUES)
    raw: dict[str, Any] = {"type": "x"} if rng.random() < 0.9 else {}
    if raw and rng.random() < 0.7:
        # as written: the very value (a mapping is then taken from the written form) or another one
        raw["value"] = value if rng.random() < 0.6 else rng.choice(VALUES)
    for key in FIGURES:
        if raw and rng.random() < 0.3:
            raw[key] = rng.choice((None, 1, 0.5, "m"))
    return AssertionSpec(
        type=rng.choice(("contains", "not-icontains", "equals", "similar")),
        value=value,
        threshold=rng.choice((None, 0.5, 1.0)),
        weight=rng.choice((1.0, 2.0, 0.0)),
        metric=rng.choice((None, "m", "")),
        raw=raw,
    )


def _details(rng: random.Random) -> dict[str, Any]:
    kind = rng.randrange(5)
    if kind == 0:
        return {}
    if kind == 1:
        return {"distance": rng.randrange(9)}
    if kind == 2:
        returned = [
            {"pass": True, "score": 1.0, "reason": "own"},
            {"assertion": {"type": "own"}, "pass": False},
        ]
        return {RETURNED_COMPONENTS: returned, "other": 1}
    if kind == 3:
        return {RETURNED_COMPONENTS: "not a list"}
    return {"nested": {"deep": [1, 2]}}


def _graded(rng: random.Random, spec: AssertionSpec) -> GradedAssertion:
    return GradedAssertion(
        spec=spec,
        passed=rng.random() < 0.5,
        score=rng.choice((0.0, 0.5, 1.0)),
        reason=rng.choice(("ok", "", f"saw {SECRET}")),
        error=rng.random() < 0.1,
        details=_details(rng),
        usage=Usage(total_tokens=3, prompt_tokens=1, completion_tokens=2) if rng.random() < 0.2 else None,
        children=tuple(_graded(rng, child) for child in spec.children),
        skipped=rng.random() < 0.1,
    )


def _rows(rng: random.Random, count: int) -> list[TestResult]:
    specs: list[AssertionSpec] = []
    for at in range(60):
        specs.append(_spec(rng, at, specs))
    rows = []
    for index in range(count):
        chosen = tuple(rng.sample(specs, rng.randrange(0, 6)))
        test = TestCase(index=index, description=f"case {index}", vars={"q": str(index)}, asserts=chosen)
        rows.append(passed_row(test, tuple(_graded(rng, spec) for spec in chosen)))
    return rows


def test_every_rows_components_are_the_rules() -> None:
    rng = random.Random(29)
    rows = _rows(rng, 300)
    with run_registry():
        memo = new_memo()
        for at, row in enumerate(rows):
            if at == 150:
                register(SECRET)  # mid-run: the later rows' forms are redacted
            written = result_to_json(row, memo=memo)
            expected = _rule_components(row.assertions)
            assert written["gradingResult"]["componentResults"] == expected
            assert written["testCase"]["assert"] == [
                redact_config(spec.raw) if spec.raw else _rule_assertion(spec) for spec in row.test.asserts
            ]


def test_a_component_never_holds_its_graded_assertions_details() -> None:
    spec = AssertionSpec(type="contains", value="a", raw={"type": "contains", "value": "a"})
    for details in ({}, {"distance": 1}):
        graded = GradedAssertion(spec=spec, passed=True, score=1.0, reason="", details=details)
        test = TestCase(index=0, asserts=(spec,))
        row = result_to_json(passed_row(test, (graded,)))
        metadata = row["gradingResult"]["componentResults"][0]["metadata"]
        assert metadata == details
        assert metadata is not details


def test_a_figure_written_as_null_is_left_out_and_a_set_one_is_the_specs() -> None:
    raw = {"type": "similar", "value": "v", "threshold": None, "weight": None, "metric": None}
    spec = AssertionSpec(type="similar", value="v", threshold=0.8, raw=raw)
    graded = GradedAssertion(spec=spec, passed=True, score=1.0, reason="")
    row = result_to_json(passed_row(TestCase(index=0, asserts=(spec,)), (graded,)))
    assert row["gradingResult"]["componentResults"][0]["assertion"] == {
        "type": "similar",
        "value": "v",
        "threshold": 0.8,
    }
    with run_registry():
        register(SECRET)
        spec = AssertionSpec(
            type="contains", value=f"x {SECRET}", raw={"type": "contains", "value": f"x {SECRET}"}
        )
        graded = GradedAssertion(spec=spec, passed=True, score=1.0, reason="")
        row = result_to_json(passed_row(TestCase(index=0, asserts=(spec,)), (graded,)))
        assert row["testCase"]["assert"][0]["value"] == f"x {MARKER}"
