"""The model package stays a leaf and keeps one import path (``from evalh.model import X``)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import pytest

import evalh.model
from evalh.assertions.base import AssertionContext
from evalh.model import (
    AssertionSpec,
    GradedAssertion,
    Measurement,
    Prompt,
    ProviderResponse,
    ProviderSpec,
    Status,
    TestCase,
    TestResult,
    Usage,
)

PACKAGE = Path(evalh.model.__file__).parent


def _evalh_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return {name for name in names if name == "evalh" or name.startswith("evalh.")}


def test_model_imports_nothing_of_evalh_outside_itself() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 1  # the package, not a single module
    outside = {
        path.name: sorted(name for name in _evalh_imports(path) if not name.startswith("evalh.model"))
        for path in modules
    }
    assert {name: found for name, found in outside.items() if found} == {}


def test_every_public_name_of_the_submodules_is_exported_by_the_package() -> None:
    submodules = [
        evalh.model.suite,
        evalh.model.results,
        evalh.model.aggregates,
        evalh.model.caching,
        evalh.model.matrix,
        evalh.model.options,
        evalh.model.thresholds,
        evalh.model.verdict,
        evalh.model.repeats,
        evalh.model.trace,
        evalh.model.var_scripts,
    ]
    names = {name for module in submodules for name in module.__all__}
    assert names == set(evalh.model.__all__)
    assert all(getattr(evalh.model, name) is getattr(m, name) for m in submodules for name in m.__all__)


@pytest.mark.parametrize(
    "cls", [Measurement, GradedAssertion, TestResult, AssertionContext, Usage, ProviderResponse]
)
def test_a_hand_written_init_takes_the_fields_with_their_defaults(cls: type) -> None:
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters] == [f.name for f in dataclasses.fields(cls)]
    for parameter, declared in zip(parameters, dataclasses.fields(cls), strict=True):
        if declared.default is not dataclasses.MISSING:
            assert parameter.default == declared.default, declared.name
        elif declared.default_factory is dataclasses.MISSING:
            assert parameter.default is inspect.Parameter.empty, declared.name


def _made() -> list[Measurement | GradedAssertion]:
    spec = AssertionSpec(type="contains")
    return [
        Measurement(value=1.0, subject="s"),
        GradedAssertion(spec=spec, passed=True, score=1.0, reason="r"),
    ]


def test_hand_written_inits_keep_results_frozen_and_their_details_their_own() -> None:
    made = _made()
    for one, other in zip(made, _made(), strict=True):
        assert one == other and one.details == {} and one.details is not other.details
        assert isinstance(one.details, dict)
        with pytest.raises(dataclasses.FrozenInstanceError):
            one.details = {}  # type: ignore[misc]
    graded = made[1]
    assert isinstance(graded, GradedAssertion) and dataclasses.replace(graded, passed=False).passed is False


def test_usage_and_responses_stay_frozen_values_with_a_metadata_of_their_own() -> None:
    first, second = ProviderResponse(output="x"), ProviderResponse(output="x")
    assert first == second and first.metadata == {} and first.metadata is not second.metadata
    assert dataclasses.replace(first, latency_ms=2.0) == ProviderResponse(output="x", latency_ms=2.0)
    total = Usage(prompt_tokens=1, total_tokens=1, cost=0.5) + Usage(requests=1, latency_ms=2.0)
    assert total == Usage(1, 0, 1, 1, 0, 0, 0.5, 2.0) and hash(total) == hash(
        Usage(1, 0, 1, 1, 0, 0, 0.5, 2.0)
    )
    for frozen in (first, total):
        with pytest.raises(dataclasses.FrozenInstanceError):
            frozen.cost = 1.0  # type: ignore[misc]


def _row() -> TestResult:
    prompt = Prompt(raw="{{q}}", label="p")
    return TestResult(TestCase(index=0), prompt, ProviderSpec(id="echo"), 0, 0, "q", Status.PASS, 1.0, "")


def test_a_row_from_the_hand_written_init_is_frozen_with_named_scores_of_its_own() -> None:
    one, other = _row(), _row()
    assert one == other and one.named_scores == {} and one.named_scores is not other.named_scores
    assert one.named_score_weights is not other.named_score_weights and one.assertions == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.status = Status.FAIL  # type: ignore[misc]
    assert dataclasses.replace(one, status=Status.FAIL, id="x").status is Status.FAIL


@pytest.mark.parametrize("made", [_made()[1], _row()], ids=["graded", "row"])
def test_kept_results_hold_their_fields_in_slots(made: object) -> None:
    # every row and its graded assertions live until the run ends: no dict per instance
    assert not hasattr(made, "__dict__")
    assert set(type(made).__slots__) == {f.name for f in dataclasses.fields(made)}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes",
    [
        {"latency_ms": 2.5},
        {"usage": Usage(requests=1)},
        {"latency_ms": 1.0, "usage": Usage(prompt_tokens=3), "error": "boom"},
        {"output": {"a": [1]}, "metadata": {"finishReason": "stop"}},
        {},
    ],
)
def test_a_replaced_response_is_what_dataclasses_replace_makes(changes: dict[str, Any]) -> None:
    original = ProviderResponse(output="x", cost=0.0, metadata={"k": 1})
    replaced = original.replaced(**changes)
    assert replaced == dataclasses.replace(original, **changes)
    assert vars(replaced) == vars(dataclasses.replace(original, **changes))
    assert replaced is not original and original == ProviderResponse(output="x", cost=0.0, metadata={"k": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        replaced.output = "y"  # type: ignore[misc]


def test_replacing_a_field_a_response_does_not_have_is_refused() -> None:
    with pytest.raises(TypeError, match="no field 'outptu'"):
        ProviderResponse(output="x").replaced(outptu="y")


@pytest.mark.parametrize("passed", [True, False])
@pytest.mark.parametrize("details", [{}, {"found": ["a"], "span": [0, 1]}])
def test_a_pass_fail_measurement_is_the_one_its_fields_make(passed: bool, details: dict[str, Any]) -> None:
    made = Measurement.pass_fail(passed, "Output contains 'a'", **details)
    expected = Measurement(
        value=1.0 if passed else 0.0,
        subject="Output contains 'a'",
        plain="Output contains 'a'",
        details=details,
    )
    assert made == expected and vars(made) == vars(expected) and type(made) is Measurement
    assert made.details is not Measurement.pass_fail(passed, "r", **details).details
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.value = 0.5  # type: ignore[misc]


@pytest.mark.parametrize("passed", [True, False])
def test_a_graded_assertion_that_ran_is_the_keyword_built_one(passed: bool) -> None:
    spec = AssertionSpec(type="not-contains", negate=True, weight=2.0)
    details = {"span": [0, 3]}
    usage = Usage(requests=1)
    ran = GradedAssertion.ran(spec, passed, 0.25, "why", details, usage, (), 3.0)
    built = GradedAssertion(
        spec=spec, passed=passed, score=0.25, reason="why", details=details, usage=usage, value=3.0
    )
    assert ran == built and ran.details is details and not ran.error and not ran.skipped
    assert [getattr(ran, f.name) for f in dataclasses.fields(ran)] == [
        getattr(built, f.name) for f in dataclasses.fields(built)
    ]


def _row_fields() -> dict[str, Any]:
    spec = AssertionSpec(type="contains", value="q")
    graded = (GradedAssertion.ran(spec, True, 1.0, "why", {}, None, (), 1.0),)
    return {
        "test": TestCase(index=3, vars={"q": "x"}),
        "prompt": Prompt(raw="{{q}}", label="p"),
        "provider": ProviderSpec(id="echo"),
        "prompt_index": 1,
        "provider_index": 2,
        "rendered_prompt": "x",
        "status": Status.FAIL,
        "score": 0.5,
        "reason": "contains: why",
        "output": {"a": [1]},
        "error": "contains: why",
        "latency_ms": 1.5,
        "cached": True,
        "cost": 0.25,
        "usage": Usage(requests=1),
        "grading_usage": Usage(texts=2),
        "assertions": graded,
        "named_scores": {"m": 0.5},
        "named_score_weights": {"m": 1.0},
        "repeat_index": 1,
        "id": "abc",
        "trace": None,
    }


def test_a_run_row_is_the_keyword_built_one() -> None:
    fields = _row_fields()
    made = TestResult.of_run(*fields.values())
    built = TestResult(**fields)
    assert type(made) is TestResult and made == built and repr(made) == repr(built)
    assert [getattr(made, f.name) for f in dataclasses.fields(made)] == [
        getattr(built, f.name) for f in dataclasses.fields(built)
    ]
    assert made.rating is None and made.named_scores is fields["named_scores"]


@pytest.mark.parametrize("kind", ["graded", "row"])
def test_draft_made_results_copy_pickle_replace_and_stay_frozen(kind: str) -> None:
    """Graded assertions and rows made as drafts given their class behave as the classes' own."""
    made: Any
    if kind == "graded":
        made = GradedAssertion.ran(AssertionSpec(type="equals"), False, 0.0, "r", {"k": 1}, None, (), 0.0)
        field, value = "reason", "other"
    else:
        made = TestResult.of_run(*_row_fields().values())
        field, value = "status", Status.PASS
    assert pickle.loads(pickle.dumps(made)) == made
    assert copy.copy(made) == made and copy.deepcopy(made) == made
    changed = dataclasses.replace(made, **{field: value})
    assert getattr(changed, field) == value and changed != made
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, field, value)
    assert not hasattr(made, "__dict__")
