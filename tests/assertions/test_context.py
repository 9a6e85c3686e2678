"""AssertionContext.for_assertion: the row's context aimed at one assertion, as dataclasses.replace."""

from __future__ import annotations

import dataclasses

import pytest

from evalh.assertions.base import AssertionContext
from evalh.model import AssertionSpec, TestCase


def test_for_assertion_is_replace_of_spec_and_threshold_and_leaves_the_row_context_alone() -> None:
    first, second = AssertionSpec(type="contains", value="a"), AssertionSpec(type="similar", value="b")
    row = AssertionContext(
        spec=first,
        output="an output",
        test=TestCase(index=3, vars={"q": "x"}),
        services=None,  # type: ignore[arg-type]  # never called here
        latency_ms=12.0,
        timeout_s=4.0,
        provider_output="raw",
    )
    aimed = row.for_assertion(second, 0.75)
    assert aimed == dataclasses.replace(row, spec=second, threshold=0.75)
    assert type(aimed) is AssertionContext and aimed is not row
    assert (row.spec, row.threshold) == (first, None)
    assert aimed.value == "b" and aimed.output_text == "an output" and aimed.vars == {"q": "x"}
    assert dataclasses.fields(AssertionContext)  # still a dataclass: replace and asdict keep working
    assert dataclasses.replace(aimed, output="other").spec is second


def test_the_hand_written_init_gives_each_context_its_own_metadata_and_stays_frozen() -> None:
    # its signature is checked with the model's hand-written inits in tests/model/test_model.py
    made = [
        AssertionContext(AssertionSpec(type="contains"), "o", TestCase(index=0), None)  # type: ignore[arg-type]
        for _ in range(2)
    ]
    assert made[0] == made[1] and made[0].provider_metadata == {}
    assert made[0].provider_metadata is not made[1].provider_metadata
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].output = "other"  # type: ignore[misc]
