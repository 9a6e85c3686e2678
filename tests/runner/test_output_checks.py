"""Output checks (``registry.output_check``: the text, JSON and lexical types) are graded without a
context aimed at each assertion (``grading.grade_row`` / ``grade_assertion``); every verdict, score,
reason and detail must be the one the context path gives: the handler called through its context,
then ``decide`` and ``finalize`` (runner/scoring.py's rules: threshold, binary, not-, weight 0)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import random
from typing import Any

import pytest

import evalh
from evalh.assertions import registry
from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import all_assertions
from evalh.errors import ConfigError
from evalh.model import (
    AssertionResult,
    AssertionSpec,
    GradedAssertion,
    Measurement,
    PassFail,
    TestCase,
    pass_fail,
)
from evalh.runner.grading import (
    GradingPlans,
    effective_threshold,
    grade_assertion,
    grade_row,
    positive_verdict,
)
from evalh.runner.scoring import finalize, reasons_shared, settle, settle_pass_fail
from tests.assertions.helpers import StandInServices, definition_of

OUTPUTS: tuple[Any, ...] = (
    "The robot delivered a stack of letters.",
    "",
    '{"id": 7, "label": "positive"}',
    {"id": 7, "label": "positive"},
    ["a", 1],
    None,
)

# (type, value, config, threshold): a valid value for each output check, some with a threshold
CASES: tuple[tuple[str, Any, dict[str, Any], float | None], ...] = (
    ("equals", "The robot delivered a stack of letters.", {}, None),
    ("equals", {"id": 7, "label": "positive"}, {}, None),
    ("equals", 42, {}, None),
    ("contains", "robot", {}, None),
    ("icontains", "ROBOT", {}, None),
    ("contains-any", ["robot", "cat"], {}, None),
    ("icontains-any", "CAT, Robot", {}, None),
    ("contains-all", ["robot", "cat"], {}, None),
    ("icontains-all", ["ROBOT", "letters"], {}, None),
    ("starts-with", "The", {}, None),
    ("regex", r"^[A-Z{][^\n]*[.}]$", {}, None),
    ("regex", r"(?i)LETTERS", {"timeoutMs": 500}, None),
    ("levenshtein", "The robot delivered a stack of letter", {}, None),
    ("levenshtein", "The robot delivered a stack of letters.", {}, 0),
    ("levenshtein", "something else entirely", {"binary": True}, 3),
    ("word-count", {"min": 2, "max": 9}, {}, None),
    ("word-count", 7, {}, None),
    ("is-json", None, {}, None),
    ("is-json", {"type": "object", "required": ["id"]}, {}, None),
    ("contains-json", {"type": "object", "required": ["label"]}, {}, None),
    ("rouge-n", "The robot delivered letters.", {"n": 1}, None),
    ("rouge-l", ["The robot delivered letters.", "a cat"], {}, 0.2),
    ("bleu", "The robot delivered a stack of letters.", {}, None),
    ("gleu", "The robot delivered a stack of letters.", {}, 0.9),
    ("exact-match", "the robot delivered a stack of letters", {}, None),
    ("f1", ["robot letters", "cat"], {}, None),
    ("jaccard", "robot letters stack", {"n": 1}, 0.1),
)


def _spec(
    type_: str, value: Any, config: dict[str, Any], threshold: float | None, **rest: Any
) -> AssertionSpec:
    return AssertionSpec(type=type_, value=value, config=config, threshold=threshold, **rest)


def _row_context(output: Any, specs: tuple[AssertionSpec, ...]) -> AssertionContext:
    test = TestCase(index=0, vars={}, asserts=specs, output=output, has_output=True, path="tests[0]")
    return AssertionContext(spec=AssertionSpec(type=""), output=output, test=test, services=StandInServices())


def _through_context(spec: AssertionSpec, row: AssertionContext) -> GradedAssertion:
    """The context path: the registered handler given a context aimed at ``spec``, decided, finalized."""
    definition = definition_of(spec.type)
    aimed = row.for_assertion(spec, effective_threshold(spec, definition))
    return finalize(spec, asyncio.run(positive_verdict(definition, aimed)))


def test_every_text_json_and_lexical_check_is_an_output_check() -> None:
    cased = {type_ for type_, *_ in CASES}
    output_checks = {name for name, definition in all_assertions().items() if definition.on_output}
    assert cased == output_checks


@pytest.mark.parametrize(("type_", "value", "config", "threshold"), CASES)
def test_an_output_check_grades_as_through_its_context(
    type_: str, value: Any, config: dict[str, Any], threshold: float | None
) -> None:
    forms = [
        _spec(type_, value, config, threshold, negate=negate, weight=weight, metric=metric)
        for negate, weight, metric in itertools.product((False, True), (1.0, 0.0, 2.5), (None, "m"))
    ]
    for output in OUTPUTS:
        row = _row_context(output, tuple(forms))
        graded = asyncio.run(grade_row(row.test.asserts, row))
        expected = tuple(_through_context(spec, row) for spec in forms)
        assert graded == expected, (type_, output)
        assert all(g.reason for g in graded)
        singly = tuple(asyncio.run(grade_assertion(spec, row)) for spec in forms)
        assert singly == expected, (type_, output)


def test_a_row_mixes_output_checks_with_context_assertions_in_order() -> None:
    specs = (
        _spec("contains", "robot", {}, None),
        _spec("javascript", "output.length > 3", {}, None),
        _spec("not-levenshtein", "The robot", {}, 2),
        _spec("contains", "robot", {}, None, raw={"type": "contains", "transform": "output.toUpperCase()"}),
    )
    row = _row_context("The robot delivered a stack of letters.", specs)
    graded = asyncio.run(grade_row(specs, row))
    assert [g.spec for g in graded] == list(specs)
    assert [g.passed for g in graded] == [True, True, True, False]  # the transform upper-cased the output
    assert graded[2].reason == "Levenshtein distance 30 is greater than threshold 2"
    assert graded[2].value == 30.0


def test_an_output_without_text_is_an_error_of_each_check_not_of_the_run() -> None:
    specs = (_spec("contains", "x", {}, None), _spec("not-equals", "x", {}, None))
    row = _row_context({"values": {1, 2}}, specs)  # a set: JSON has no text for it
    graded = asyncio.run(grade_row(specs, row))
    assert [(g.error, g.passed) for g in graded] == [(True, False), (True, False)]
    assert graded[0].reason.startswith("contains crashed: TypeError: Object of type set")
    assert graded[1].reason.startswith("not-equals crashed: TypeError: Object of type set")


def test_an_impossible_threshold_built_in_code_is_an_error_before_the_check_runs() -> None:
    spec = _spec("levenshtein", "abc", {}, -1.0)
    row = _row_context("abc", (spec,))
    (graded,) = asyncio.run(grade_row((spec,), row))
    assert graded.error and not graded.passed
    assert graded.reason == "levenshtein: threshold must be >= 0 (got -1): a max distance is never below 0"


@pytest.mark.parametrize(
    "output", [{"ids": {1, 2}}, {"day": datetime.date(2024, 1, 1)}, [{"at": datetime.time(9)}]]
)
@pytest.mark.parametrize("kind", ["is-json", "contains-json"])
def test_a_structured_output_without_json_text_passes_the_json_checks_as_it_always_did(
    kind: str, output: Any
) -> None:
    """is-json and contains-json read the structure, not the text: a set or a date in a function
    provider's output has no JSON text, and must not turn their pass into an ERROR."""
    row = evalh.check(output, [{"type": kind}])
    assert row.passed and row.error is None


def test_contains_json_of_an_output_with_no_object_and_no_text_is_still_an_error_of_its_own() -> None:
    specs = (_spec("contains-json", None, {}, None), _spec("is-json", None, {}, None))
    graded = asyncio.run(grade_row(specs, _row_context({1, 2}, specs)))  # a set: no object, no text
    assert [(g.error, g.passed) for g in graded] == [(True, False), (False, True)]
    assert graded[0].reason.startswith("contains-json crashed: TypeError: Object of type set")


def test_random_rows_of_output_checks_grade_as_through_their_contexts() -> None:
    """Rows of random output checks (thresholds, not-, weights, metrics, impossible thresholds, an
    assert-set of them) on random outputs: each verdict is the context path's, in order."""
    rng = random.Random(29)
    for _ in range(150):
        specs = []
        for _ in range(rng.randint(1, 7)):
            type_, value, config, threshold = rng.choice(CASES)
            if rng.random() < 0.2:
                threshold = rng.choice((None, 0.0, 0.5, 1.0, 3.0, -1.0, 7.0))
            specs.append(
                _spec(
                    type_,
                    value,
                    config,
                    threshold,
                    negate=rng.random() < 0.3,
                    weight=rng.choice((1.0, 0.0, 2.0)),
                    metric=rng.choice((None, "m")),
                )
            )
        if rng.random() < 0.2:
            children = tuple(specs[: rng.randint(1, len(specs))])
            specs.append(
                AssertionSpec(type="assert-set", children=children, threshold=rng.choice((None, 0.5)))
            )
        output = rng.choice(OUTPUTS[:5])
        row = _row_context(output, tuple(specs))
        graded = asyncio.run(grade_row(row.test.asserts, row))
        expected = tuple(
            asyncio.run(grade_assertion(spec, row)) if spec.children else _through_context(spec, row)
            for spec in specs
        )
        assert graded == expected, (specs, output)


def _random_spec(rng: random.Random) -> AssertionSpec:
    """One of CASES in a random form: threshold (some impossible), not-, weight, metric, config.binary,
    an assertion transform of its own."""
    type_, value, config, threshold = rng.choice(CASES)
    if rng.random() < 0.3:
        threshold = rng.choice((None, 0.0, 0.5, 1.0, 3.0, -1.0, 7.0, float("nan")))
    if rng.random() < 0.2:
        config = {**config, "binary": rng.choice((True, False, "yes"))}
    raw: dict[str, Any] = {"type": type_}
    if rng.random() < 0.1:
        raw["transform"] = "output.toUpperCase()" if rng.random() < 0.5 else "output.slice(1)"
    return _spec(
        type_,
        value,
        config,
        threshold,
        negate=rng.random() < 0.3,
        weight=rng.choice((1.0, 0.0, 2.0)),
        metric=rng.choice((None, "m")),
        raw=raw,
    )


def test_one_runs_plans_grade_every_row_as_through_their_contexts() -> None:
    """A run decides each type once (GradingPlans, shared by all its rows: the refusal of each
    threshold, the check, binary, direction) and grades as the context path does, row after row, with
    the same type under other thresholds, configs and transforms in later rows."""
    rng = random.Random(2904)
    plans = GradingPlans()
    with reasons_shared():
        for _ in range(200):
            specs = tuple(_random_spec(rng) for _ in range(rng.randint(1, 6)))
            row = _row_context(rng.choice(OUTPUTS[:5]), specs)
            graded = asyncio.run(grade_row(specs, row, plans))
            expected = tuple(
                asyncio.run(grade_assertion(spec, row))
                if "transform" in spec.raw
                else _through_context(spec, row)
                for spec in specs
            )
            assert graded == expected, (specs, row.output)
            assert graded == asyncio.run(grade_row(specs, row)), "a row's own plans grade the same"


def _verdicts(rng: random.Random) -> PassFail:
    details = rng.choice(({}, {"found": ["a"]}, {"span": [0, 3], "count": 2}))
    return rng.random() < 0.5, rng.choice(("Output contains 'a'", "Output is not JSON", "")), dict(details)


def test_a_pass_fail_verdict_settles_as_the_measurement_it_stands_for() -> None:
    """settle_pass_fail (an output check's plain verdict) against settle of Measurement.pass_fail, for a
    pass/fail type (no direction) under any threshold, binary, not-, weight and metric."""
    rng = random.Random(29)
    for _ in range(500):
        verdict = _verdicts(rng)
        spec = _spec(
            rng.choice(("contains", "equals", "regex")),
            "a",
            {"binary": True} if rng.random() < 0.3 else {},
            rng.choice((None, 0.5, 2.0)),
            negate=rng.random() < 0.5,
            weight=rng.choice((1.0, 0.0, 3.0)),
            metric=rng.choice((None, "m")),
        )
        binary = spec.config.get("binary") is True
        measured = settle(spec, Measurement.of_pass_fail(verdict), spec.threshold, None, binary)
        assert settle_pass_fail(spec, verdict) == measured, (spec, verdict)
        assert settle_pass_fail(spec, verdict).details == verdict[2]


def test_a_pass_fail_check_still_gives_its_context_handler_a_measurement() -> None:
    """Through its context (an assert-set child, a script asking the registry), a pass/fail output
    check answers with the measurement its verdict stands for, as every handler does."""
    definition = definition_of("contains")
    row = _row_context("The robot", (_spec("contains", "robot", {}, None),))
    outcome = definition.fn(row.for_assertion(row.test.asserts[0], None))
    assert outcome == Measurement.pass_fail(True, "Output contains 'robot'")


def _moody_check(spec: AssertionSpec, output: Any, text: str) -> Any:
    """A pass/fail output check whose outcome the text decides: each kind a check may return or raise."""
    if "bug" in text:
        raise ValueError(f"cannot read {text!r}")
    if "config" in text:
        raise ConfigError("config.pattern is not a pattern")
    if "measured" in text:
        return Measurement(value=0.25, subject="A quarter", details={"seen": text})
    if "refused" in text:
        return AssertionResult.failure("nothing to check")
    if "skip" in text:
        return AssertionResult.skip("not for this row")
    return pass_fail(str(spec.value) in text, f"Output has {spec.value}", found=[spec.value])


def _untraced(graded: tuple[GradedAssertion, ...]) -> tuple[GradedAssertion, ...]:
    """The graded assertions without a crash's traceback (its frames name the function that called the
    check)."""
    return tuple(
        dataclasses.replace(g, details={k: v for k, v in g.details.items() if k != "traceback"})
        for g in graded
    )


def test_a_pass_fail_check_that_raises_or_measures_grades_as_through_its_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """grade_row calls a pass/fail text check itself: whatever the check returns (a verdict, a
    measurement, an ERROR, a skip) or raises (a located error, a bug), in any form (not-, weight 0,
    config.binary, a threshold it ignores), the graded assertion is grade_assertion's, and the context
    path's when the check raises nothing."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.output_check("x-moody", family="text", description="test only")(_moody_check)
    rng = random.Random(2906)
    texts = ("a bug here", "wrong config", "measured it", "refused", "skip me", "has a", "has b", "")
    plans = GradingPlans()
    assert plans.of(_spec("x-moody", "a", {}, None)).pass_fail
    with reasons_shared():
        for _ in range(120):
            specs = tuple(
                _spec(
                    rng.choice(("x-moody", "contains")),
                    rng.choice(("a", "b")),
                    rng.choice(({}, {"binary": True})),
                    rng.choice((None, 0.5)),
                    negate=rng.random() < 0.4,
                    weight=rng.choice((1.0, 0.0)),
                )
                for _ in range(rng.randint(1, 5))
            )
            row = _row_context(rng.choice(texts), specs)
            graded = asyncio.run(grade_row(specs, row, plans))
            # grade_assertion: _check_output's general steps (threshold, refusal, the errors it catches)
            expected = tuple(asyncio.run(grade_assertion(spec, row)) for spec in specs)
            assert _untraced(graded) == _untraced(expected), (specs, row.output)
            if not any(word in row.output for word in ("bug", "config")):  # the context path raises them
                assert graded == tuple(_through_context(spec, row) for spec in specs)
            crashed = [g for g in graded if g.reason.startswith("x-moody crashed")]
            assert all(g.error and "ValueError" in g.details["traceback"] for g in crashed)
