"""The measurement contract: every registered type declares how its threshold works, and
``runner/scoring.py`` alone compares a measurement with it (threshold 0, the default, ``not-``)."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib
import inspect
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from evalh.assertions.registry import AssertionDef, all_assertions
from evalh.config.checks import value_problem
from evalh.model import (
    AssertionSpec,
    Measurement,
    ProviderChoice,
    ProviderSpec,
    RunOptions,
    Status,
    Suite,
    TestCase,
)
from evalh.runner.cache import Cache
from evalh.runner.execute import run_suite
from evalh.runner.scoring import decide, finalize
from evalh.runner.services import ProviderPool, RunServices
from tests.assertions.helpers import grade, make_context
from tests.assertions.judge_helpers import OPENAI_PATH, openai_grader, openai_text
from tests.loopback import LoopbackServer

PACKAGE = Path(__file__).resolve().parents[2] / "evalh"
# The one threshold comparison, and the config check of a threshold against the declared bounds.
ALLOWED = {("model/thresholds.py", "meets"), ("assertions/registry.py", "threshold_problem")}
TYPES = all_assertions()
THRESHOLDED = sorted(name for name, definition in TYPES.items() if definition.threshold_applies)


def _graded(definition: AssertionDef, value: float, threshold: float | None, negate: bool) -> bool:
    assert definition.direction is not None
    spec = AssertionSpec(type=definition.name, negate=negate, threshold=threshold)
    result = decide(Measurement(value=value, subject="measured"), threshold, definition.direction)
    return finalize(spec, result).passed


def _worse(definition: AssertionDef, value: float, step: float = 0.01) -> float:
    return value - step if definition.direction == "higher" else value + step


def _comparisons_of_thresholds(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing function, line) of every <, <=, >, >= with a ``threshold`` operand."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in node.ops
        ):
            inside = [n for o in (node.left, *node.comparators) for n in ast.walk(o)]
            names = [n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in inside]
            if any("threshold" in name for name in names):
                found.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "")
    return found


def test_one_threshold_comparison_in_the_codebase() -> None:
    places = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for function, line in _comparisons_of_thresholds(ast.parse(path.read_text(encoding="utf-8"))):
            if (relative, function) not in ALLOWED:
                places.append(f"{relative}:{line} in {function}()")
    assert places == [], (
        "compare with a threshold only through model/thresholds.py meets (return a Measurement)"
    )
    # and the guard itself sees the allowed comparison
    home = (PACKAGE / "model" / "thresholds.py").read_text(encoding="utf-8")
    assert [f for f, _ in _comparisons_of_thresholds(ast.parse(home))] == ["meets", "meets"]


@pytest.mark.parametrize("name", sorted(TYPES))
def test_every_type_declares_its_threshold(name: str) -> None:
    definition = TYPES[name]
    if not definition.threshold_applies:
        assert definition.default_threshold is None and not definition.requires_threshold
        assert definition.threshold_meaning == ""  # `evalh list` shows no threshold for it
        return
    word = {"higher": "min", "lower": "max"}[str(definition.direction)]
    assert definition.threshold_meaning.startswith(word), "the documented meaning follows the direction"
    if definition.default_threshold is not None:
        assert definition.threshold_problem(definition.default_threshold) is None


@pytest.mark.parametrize("name", THRESHOLDED)
def test_threshold_zero_default_and_negation(name: str) -> None:
    definition = TYPES[name]
    # threshold 0: for a minimum anything from 0 up passes; for a maximum only 0 does
    assert _graded(definition, 0.0, 0.0, negate=False)
    assert not _graded(definition, 0.0, 0.0, negate=True)
    assert _graded(definition, 0.5, 0.0, negate=False) is (definition.direction == "higher")
    default = definition.default_threshold
    if default is not None:
        assert _graded(definition, default, default, negate=False)  # the threshold itself passes
        assert not _graded(definition, _worse(definition, default), default, negate=False)
        assert not _graded(definition, default, default, negate=True)
        assert _graded(definition, _worse(definition, default), default, negate=True)
    else:  # without a threshold a measured value above 0 passes
        assert _graded(definition, 1.0, None, negate=False) and not _graded(definition, 0.0, None, False)


@pytest.mark.parametrize("name", THRESHOLDED)
def test_errors_and_not_applicable_are_never_inverted(name: str) -> None:
    definition = TYPES[name]
    assert definition.direction is not None
    spec = AssertionSpec(type=name, negate=True, threshold=0.0)
    empty = decide(Measurement.not_applicable("nothing to measure"), 0.0, definition.direction)
    assert not finalize(spec, empty).passed and not finalize(spec, empty).error


def _row(output: str, spec: AssertionSpec) -> Status:
    suite = Suite(tests=(TestCase(index=0, output=output, has_output=True, asserts=(spec,)),))
    return run_suite(suite, RunOptions(cache=False)).results[0].status


@pytest.mark.parametrize("kind", ["exact-match", "f1", "rouge-l", "jaccard", "levenshtein"])
def test_threshold_zero_through_the_runner(kind: str) -> None:
    mismatch = AssertionSpec(type=kind, value="Paris", threshold=0.0)
    # a minimum of 0 accepts any score; a maximum distance of 0 accepts only an exact output
    expected = Status.FAIL if kind == "levenshtein" else Status.PASS
    assert _row("Lyon", mismatch) is expected
    assert _row("Paris", mismatch) is Status.PASS


def test_exact_match_honours_its_threshold_and_negation() -> None:
    assert _row("Lyon", AssertionSpec(type="exact-match", value="Paris")) is Status.FAIL
    assert _row("Lyon", AssertionSpec(type="exact-match", value="Paris", negate=True)) is Status.PASS
    assert _row("Lyon", AssertionSpec(type="exact-match", value="Paris", threshold=0.0)) is Status.PASS
    negated = AssertionSpec(type="exact-match", value="Paris", threshold=0.0, negate=True)
    assert _row("Lyon", negated) is Status.FAIL


TEXT_PASS_FAIL = ["equals", "contains", "icontains", "contains-any", "contains-all", "starts-with", "regex"]


@pytest.mark.parametrize("name", TEXT_PASS_FAIL)
def test_pass_fail_text_checks_measure_and_scoring_decides(name: str) -> None:
    # the handler returns 1 or 0 with its reason; the verdict is decided in runner/scoring.py
    ctx = make_context(name, value="abc", output="abc")
    measured = TYPES[name].fn(ctx)
    assert isinstance(measured, Measurement) and measured.value == 1.0
    missed = TYPES[name].fn(make_context(name, value="zzz", output="abc"))
    assert isinstance(missed, Measurement) and missed.value == 0.0
    assert not decide(missed, None, None).passed and decide(measured, None, None).passed


@pytest.mark.parametrize("threshold", [0.0, 0.5, 2.0])
def test_a_threshold_on_a_pass_fail_type_changes_nothing(threshold: float) -> None:
    # promptfoo ignores it (validate warns); a measured 1 passes, a 0 fails, whatever the threshold
    hit = grade(make_context("contains", value="b", output="abc", threshold=threshold))
    miss = grade(make_context("contains", value="z", output="abc", threshold=threshold))
    assert (hit.passed, hit.score, miss.passed, miss.score) == (True, 1.0, False, 0.0)
    assert "threshold" not in hit.details and hit.reason == "Output contains 'b'"


@pytest.mark.parametrize("name", ["is-json", "contains-json"])
def test_json_checks_measure_and_scoring_decides(name: str) -> None:
    hit = TYPES[name].fn(make_context(name, output='{"a": 1}'))
    miss = TYPES[name].fn(make_context(name, output="no json here"))
    assert isinstance(hit, Measurement) and isinstance(miss, Measurement)
    assert (hit.value, miss.value) == (1.0, 0.0)
    assert decide(hit, None, None).passed and not decide(miss, None, None).passed


# -- every type measures -----------------------------------------------------------------------------

_CONTEXT = "Paris is the capital of France. It lies on the Seine."


def _samples() -> dict[str, dict[str, Any]]:
    """One valid use of each type (value, output, config; vars for the RAG judges), from the
    ``CONTRACT_SAMPLES`` of each family's tests (tests/assertions/test_<family>.py): what validate accepts,
    so the handler runs to its measurement. A new type adds its sample in its own tests."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((PACKAGE.parent / "tests" / "assertions").glob("test_*.py")):
        module = importlib.import_module(f"tests.assertions.{path.stem}")
        for name, sample in getattr(module, "CONTRACT_SAMPLES", {}).items():
            assert name not in found, f"{name} has two samples"
            found[name] = sample
    return found


SAMPLES = _samples()
# The grader's reply holds every key any judge asks for, so each judge reads its own.
_GRADER_REPLY = {
    "pass": True,
    "score": 1,
    "reason": "fine",
    "category": "A",
    "answer": "Y",
    "steps": ["Check the answer"],
    "questions": ["What is the capital of France?"],
    "statements": ["Paris is the capital."],
    "verdicts": [{"statement": "Paris is the capital.", "verdict": "yes"}],
    "verdict": "yes",
    "sentences": [{"sentence": "Paris is the capital of France.", "attributed": True}],
    "relevant_sentences": ["Paris is the capital of France."],
    "refused": False,
    "warranted": False,
    "well_formed": True,
}


def _measure(name: str, sample: Mapping[str, Any], grader: ProviderSpec) -> Any:
    """The registered handler's own return value for ``sample`` (validated first, as validate would)."""
    definition = TYPES[name]
    value, config = sample.get("value"), sample.get("config", {})
    assert value_problem(definition, value, config) is None, "the sample must be a valid use"
    services = RunServices(ProviderPool(), Cache.open(False))
    ctx = make_context(
        name,
        value=value,
        output=sample["output"],
        config=config,
        latency_ms=sample.get("latency_ms"),
        vars={"query": "What is the capital of France?", "context": _CONTEXT},
        prompt="What is the capital of France?",
        services=services,
        provider=ProviderChoice(text=grader, embedding=ProviderSpec(id="local")),
    )
    children = tuple(
        AssertionSpec(type=c["type"], value=c["value"], path="child") for c in sample.get("children", ())
    )
    ctx = dataclasses.replace(
        ctx,
        cost=sample.get("cost"),
        spec=dataclasses.replace(ctx.spec, children=children),
        trace=sample.get("trace"),  # a TraceSource, for the trace assertions
        provider_spec=sample.get("provider_spec"),
        provider_metadata=sample.get("provider_metadata", {}),
    )

    async def scenario() -> Any:
        try:
            outcome = definition.fn(ctx)
            return await outcome if inspect.isawaitable(outcome) else outcome
        finally:
            await services.pool.aclose()

    return asyncio.run(scenario())


def test_every_registered_type_has_a_sample() -> None:
    # a type comparing a test's outputs (select-best, max-score) has no per-row handler to sample: the
    # runner grades it across the rows (tests/runner/test_comparing.py)
    per_row = {name for name, definition in TYPES.items() if not definition.compares_outputs}
    assert set(SAMPLES) == per_row, "add a valid use of the new type to its family's CONTRACT_SAMPLES"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_type_returns_a_measurement_and_scoring_decides(name: str, loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda request: openai_text(json.dumps(_GRADER_REPLY)))
    measured = _measure(name, SAMPLES[name], openai_grader(loopback))
    # no handler builds a verdict: it returns what it measured (an AssertionResult only for an error)
    assert isinstance(measured, Measurement), measured
    definition = TYPES[name]
    verdict = decide(measured, definition.default_threshold, definition.direction)
    assert verdict.passed and not verdict.error, verdict.reason  # every sample is a passing use


def test_no_handler_constructs_a_verdict() -> None:
    # AssertionResult(...) in an assertion family would be a verdict built beside scoring.py;
    # AssertionResult.failure (an error: the assertion could not run) is the only one allowed
    built = []
    for path in sorted((PACKAGE / "assertions").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "AssertionResult"
            ):
                built.append(f"{path.name}:{node.lineno}")
    assert built == []
