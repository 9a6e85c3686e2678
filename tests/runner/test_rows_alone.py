"""A run asks no row whether it compares outputs or prefetches embeddings when none of its tests'
assertions (assert-set children at any depth included) is of a type that does
(``GradingPlans.any_across_rows``): what it decides must be what asking each row would find."""

from __future__ import annotations

import random

from evalh.assertions.base import AssertionContext
from evalh.model import AssertionSpec, TestCase
from evalh.runner.comparing import compares_outputs
from evalh.runner.grading import GradingPlans, collect_prefetch
from tests.assertions.helpers import StandInServices

PLAIN = ("contains", "not-icontains", "equals", "regex", "levenshtein", "is-json", "javascript", "x-unknown")
ACROSS = ("select-best", "max-score", "similar", "not-similar")


def _spec(rng: random.Random, kinds: tuple[str, ...], depth: int = 0) -> AssertionSpec:
    if depth < 3 and rng.random() < 0.25:
        children = tuple(_spec(rng, kinds, depth + 1) for _ in range(rng.randint(1, 3)))
        return AssertionSpec(type="assert-set", children=children)
    kind = rng.choice(kinds)
    return AssertionSpec(type=kind, negate=kind.startswith("not-"), value="a reference text")


def _asked_each_row(tests: list[TestCase], plans: GradingPlans) -> bool:
    """What the run found by asking each row (the path it skips)."""
    for test in tests:
        ctx = AssertionContext(
            spec=AssertionSpec(type=""), output="out", test=test, services=StandInServices()
        )
        if compares_outputs(test, plans) or collect_prefetch(test.asserts, ctx, plans):
            return True
    return False


def _nested(spec: AssertionSpec) -> list[AssertionSpec]:
    return [spec, *(found for child in spec.children for found in _nested(child))]


def test_a_run_is_never_alone_when_asking_each_row_would_find_work() -> None:
    rng = random.Random(2907)
    for case in range(300):
        kinds = PLAIN + ACROSS if case % 3 == 0 else PLAIN
        tests = [
            TestCase(index=index, asserts=tuple(_spec(rng, kinds) for _ in range(rng.randint(0, 4))))
            for index in range(rng.randint(1, 5))
        ]
        plans = GradingPlans()
        decided = plans.any_across_rows([test.asserts for test in tests] * 2)  # rows share a test's tuple
        # never alone when some row would have asked; it may ask when no row finds anything to do (a
        # comparison inside a set, a prefetch that declares nothing): each row is then asked as before
        assert decided or not _asked_each_row(tests, GradingPlans()), tests
        across = {spec.type for test in tests for top in test.asserts for spec in _nested(top)} & set(ACROSS)
        assert decided == bool(across)


def test_a_comparison_or_a_prefetch_deep_in_a_set_is_found() -> None:
    for kind in ACROSS:
        inner = AssertionSpec(type="assert-set", children=(AssertionSpec(type="contains", value="a"),))
        deep = AssertionSpec(
            type="assert-set",
            children=(
                inner,
                AssertionSpec(type="assert-set", children=(AssertionSpec(type=kind, value="a"),)),
            ),
        )
        assert GradingPlans().any_across_rows([(AssertionSpec(type="equals", value="a"), deep)])
        assert not GradingPlans().any_across_rows([(AssertionSpec(type="equals", value="a"), inner)])
