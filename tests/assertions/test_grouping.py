"""assert-set: a group of assertions scored as one item of its test (scoring in tests/runner)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from evalh.assertions.grouping import assert_set
from evalh.model import AssertionSpec, Measurement
from evalh.runner.cache import Cache
from evalh.runner.scoring import decide
from evalh.runner.services import ProviderPool, RunServices
from tests.assertions.helpers import make_context


def test_a_set_hands_its_graded_children_to_scoring() -> None:
    children = (
        AssertionSpec(type="contains", value="Par", path="tests[0].assert[0].assert[0]"),
        AssertionSpec(type="contains", value="Lyon", path="tests[0].assert[0].assert[1]"),
    )
    ctx = make_context("assert-set", output="Paris", services=RunServices(ProviderPool(), Cache.open(False)))
    ctx = dataclasses.replace(ctx, spec=dataclasses.replace(ctx.spec, children=children))
    measured = asyncio.run(assert_set(ctx))
    assert isinstance(measured, Measurement)
    assert [child.passed for child in measured.children] == [True, False]
    assert not decide(measured, None, "higher").passed  # without a threshold every child must pass
    assert decide(measured, 0.5, "higher").passed  # with one, the children's mean must reach it


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "assert-set": {"output": "Paris", "children": ({"type": "contains", "value": "Par"},)},
}
