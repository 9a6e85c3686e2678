"""AssertionContext.for_assertion: the row's context aimed at one assertion, as dataclasses.replace."""

from __future__ import annotations

import dataclasses

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
