"""trajectory:goal-success: a real chat grader (a loopback OpenAI server) reads the goal, the trajectory
summary and the output, through the runner's real services."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from evalh.assertions.trace_checks import TRACING_OFF
from evalh.model import GradedAssertion, ProviderChoice, Span
from evalh.runner.cache import Cache
from evalh.runner.grading import positive_verdict
from evalh.runner.scoring import finalize
from evalh.runner.services import ProviderPool, RunServices
from tests.assertions.helpers import declared_problems, definition_of, make_context
from tests.assertions.judge_helpers import OPENAI_PATH, grader_messages, openai_grader, openai_text
from tests.assertions.trace_support import TRACE_ID, MemoryTrace, span, tool_span
from tests.loopback import LoopbackServer

AGENT = [tool_span("search_orders", 1, {"order_id": "123"}), span("agent response", 2)]

# A valid use of the type: tests/runner/test_threshold_contract.py runs its handler on it and checks it
# returns a Measurement (scoring decides).
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "trajectory:goal-success": {
        "value": "Find the order",
        "output": "It shipped.",
        "trace": MemoryTrace(AGENT),
    },
}


def goal(
    loopback: LoopbackServer,
    value: Any,
    spans: list[Span] | None,
    kind: str = "trajectory:goal-success",
    **kw: Any,
) -> GradedAssertion:
    async def run() -> GradedAssertion:
        services = RunServices(ProviderPool(), Cache.open(False))
        ctx = make_context(
            kind,
            value=value,
            output="Your order shipped yesterday.",
            services=services,
            provider=ProviderChoice(default=openai_grader(loopback)),
            **kw,
        )
        ctx = dataclasses.replace(ctx, trace=None if spans is None else MemoryTrace(spans))
        try:
            return finalize(ctx.spec, await positive_verdict(definition_of(kind), ctx))
        finally:
            await services.pool.aclose()

    return asyncio.run(run())


def test_the_grader_sees_goal_trajectory_and_output(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", OPENAI_PATH, lambda r: openai_text('{"reason": "Looked it up.", "pass": true, "score": 0.9}')
    )
    graded = goal(loopback, "  Tell the user whether the order shipped ", AGENT)
    assert (graded.passed, graded.score, graded.reason, graded.error) == (True, 0.9, "Looked it up.", False)
    user = grader_messages(loopback.requests[0])[-1]["content"]
    assert "<Goal>\nTell the user whether the order shipped\n</Goal>" in user  # trimmed, as promptfoo
    assert "<Output>\nYour order shipped yesterday.\n</Output>" in user
    trajectory = user.split("<Trajectory>\n", 1)[1].split("\n</Trajectory>", 1)[0]
    summary = json.loads(trajectory)
    assert summary["traceId"] == TRACE_ID and summary["stepCount"] == 2
    assert [(s["type"], s["name"]) for s in summary["steps"]] == [
        ("tool", "search_orders"),
        ("message", "agent response"),
    ]


def test_an_object_value_and_the_threshold(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", OPENAI_PATH, lambda r: openai_text('{"reason": "Partly.", "pass": true, "score": 0.5}')
    )
    graded = goal(loopback, {"goal": "ship it"}, AGENT, threshold=0.8)
    assert not graded.passed and graded.score == 0.5
    assert "<Goal>\nship it\n</Goal>" in grader_messages(loopback.requests[0])[-1]["content"]


def test_negated_goal_success_inverts_the_grader(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", OPENAI_PATH, lambda r: openai_text('{"reason": "Not done.", "pass": false, "score": 0}')
    )
    graded = goal(loopback, "delete the account", AGENT, kind="not-trajectory:goal-success")
    assert graded.passed and graded.score == 1.0


def test_an_unreadable_reply_is_an_error_never_inverted(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text("I think it went fine"))
    graded = goal(loopback, "ship it", AGENT, kind="not-trajectory:goal-success")
    assert graded.error and not graded.passed
    assert "trajectory:goal-success response" in graded.reason


def test_no_trace_is_an_error_before_any_grader_call(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text('{"pass": true, "score": 1}'))
    graded = goal(loopback, "ship it", None)
    assert graded.error and graded.reason == TRACING_OFF
    graded = goal(loopback, "ship it", [])
    assert graded.error and "no spans" in graded.reason
    assert loopback.requests == []


def test_a_goal_is_a_text_or_an_object_with_one() -> None:
    assert declared_problems({"type": "trajectory:goal-success", "value": "ship it"}) == []
    assert declared_problems({"type": "trajectory:goal-success", "value": {"goal": "ship it"}}) == []
    assert declared_problems({"type": "trajectory:goal-success", "value": "  "})
    assert declared_problems({"type": "trajectory:goal-success", "value": {"aim": "x"}})
