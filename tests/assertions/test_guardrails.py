"""guardrails: the provider's own safety verdict (promptfoo's src/assertions/guardrails.ts), read from the
reply's metadata, including a Python provider's reply."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from evalh.providers.scripts import script_reply
from tests.assertions.helpers import grade, make_context


def graded(metadata: dict[str, Any], assertion_type: str = "guardrails") -> tuple[bool, str]:
    ctx = dataclasses.replace(make_context(assertion_type, output="hi"), provider_metadata=metadata)
    result = grade(ctx)
    return result.passed, result.reason


@pytest.mark.parametrize(
    ("guardrails", "reason"),
    [
        ({"flagged": True}, "Content failed safety checks"),
        ({"flagged": True, "flaggedInput": True}, "Prompt failed safety checks"),
        ({"flagged": True, "flaggedOutput": True}, "Output failed safety checks"),
        ({"flagged": True, "flaggedOutput": True, "reason": "violence"}, "violence"),
    ],
)
def test_a_flagged_reply_fails_with_promptfoos_reason(guardrails: dict[str, Any], reason: str) -> None:
    assert graded({"guardrails": guardrails}) == (False, reason)


def test_an_unflagged_or_unscreened_reply_passes() -> None:
    assert graded({"guardrails": {"flagged": False}}) == (True, "Content passed safety checks")
    assert graded({}) == (True, "Content passed safety checks")


def test_a_python_providers_guardrails_reach_the_assertion() -> None:
    reply = script_reply({"output": "no", "guardrails": {"flagged": True, "flaggedInput": True}}, "p.py")
    assert reply.metadata["guardrails"] == {"flagged": True, "flaggedInput": True}
    assert graded(dict(reply.metadata)) == (False, "Prompt failed safety checks")


CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "guardrails": {"output": "hi", "provider_metadata": {"guardrails": {"flagged": False}}}
}
