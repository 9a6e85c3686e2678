"""``trajectory:goal-success``: a grader model judges whether the agent reached the goal (the value), from
its final output and a summary of its trajectory.

The summary is promptfoo's (``summarizeTrajectoryForJudge``): pretty JSON of the trace id, the step count
and the steps, each its index, type and name (its span name and status when they add something), repeats
collapsed into one step with a count, at most 24 entries (the first 12, the count left out, the last 12).
The grader is asked as ``llm-rubric``'s is (``judge_core.py``: resolution, defaults, ``rubricPrompt``)
and its reply read by the same rules (pass, score, threshold); no trace or no spans is an ERROR before
any grader is asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.judge_core import Grading, custom_prompt, graded
from evalh.assertions.judge_prompts import GOAL_SUCCESS_PROMPT
from evalh.assertions.judged import rubric_verdict
from evalh.assertions.registry import NONBLANK_TEXT, assertion
from evalh.assertions.trace_checks import on_spans, row_steps
from evalh.assertions.trace_steps import Step, status_number
from evalh.model import AssertionResult, Measurement, Span

__all__ = ["summarize_for_judge"]

FAMILY = "trajectory"

_JUDGE_MAX_STEPS = 24  # the first 12 and the last 12 steps
_JUDGE_HEAD_STEPS = 12


@dataclass
class _SummaryStep:
    index: int
    type: str
    name: str
    span_name: str
    status: dict[str, Any] | None
    collapsed: int = 1
    entry: dict[str, Any] = field(default_factory=dict)


def _summary_step(index: int, step: Step) -> _SummaryStep:
    code = status_number(step.span)
    status: dict[str, Any] | None = None
    if code:
        status = {"code": code, **({"message": step.span.status_message} if step.span.status_message else {})}
    entry: dict[str, Any] = {"index": index, "type": step.type, "name": step.name}
    if step.span.name != step.name:
        entry["spanName"] = step.span.name
    if status is not None:
        entry["status"] = status
    return _SummaryStep(index, step.type, step.name, step.span.name, status, entry=entry)


def summarize_for_judge(trace_id: str, steps: Sequence[Step]) -> str:
    """promptfoo's trajectory summary for ``trajectory:goal-success``: each step's index, type, name
    (span name and status when they add something), repeats of a step collapsed into one with a count,
    and at most 24 entries: the first 12, a count of those left out, the last 12. Pretty JSON."""
    compacted: list[_SummaryStep] = []
    for index, step in enumerate(steps, start=1):
        current = _summary_step(index, step)
        previous = compacted[-1] if compacted else None
        if previous is not None and (previous.type, previous.name, previous.span_name, previous.status) == (
            current.type,
            current.name,
            current.span_name,
            current.status,
        ):
            previous.collapsed += 1
            previous.entry["collapsedCount"] = previous.collapsed
            continue
        compacted.append(current)
    entries: list[dict[str, Any]] = [item.entry for item in compacted]
    if len(entries) > _JUDGE_MAX_STEPS:
        tail = _JUDGE_MAX_STEPS - _JUDGE_HEAD_STEPS
        entries = [
            *entries[:_JUDGE_HEAD_STEPS],
            {"omittedCount": len(entries) - _JUDGE_MAX_STEPS},
            *entries[-tail:],
        ]
    summary = {
        "traceId": trace_id,
        "stepCount": len(steps),
        "compactedStepCount": len(compacted),
        "steps": entries,
    }
    return json.dumps(summary, ensure_ascii=False, indent=2, default=str)


def _goal(value: Any) -> str:
    return str(value["goal"] if isinstance(value, Mapping) else value).strip()


@assertion(
    "trajectory:goal-success",
    family=FAMILY,
    description="A grader model judges from the output and the traced steps if the agent reached the goal",
    needs=("text",),
    threshold_meaning="min grader score (optional; pass also needs the grader's pass)",
    direction="higher",
    bounds=(0.0, 1.0),
    requires_value=True,
    value_schema={
        "anyOf": [
            NONBLANK_TEXT,
            {
                "type": "object",
                "properties": {"goal": NONBLANK_TEXT},
                "required": ["goal"],
                "additionalProperties": False,
            },
        ],
        "description": "The goal the agent had to reach (a text, or {goal}).",
    },
)
@on_spans
async def goal_success(ctx: AssertionContext, spans: tuple[Span, ...]) -> AssertionResult | Measurement:
    assert ctx.trace is not None  # on_spans found spans
    summary = summarize_for_judge(ctx.trace.trace_id, row_steps(ctx, spans))

    async def ask(ctx: AssertionContext, grading: Grading) -> AssertionResult | Measurement:
        template = custom_prompt(ctx) or GOAL_SUCCESS_PROMPT
        variables = grading.variables(goal=_goal(ctx.value), trajectory=summary)
        reply = await grading.ask(template, variables)
        return rubric_verdict(reply, grading, label="trajectory:goal-success")

    return await graded(ask)(ctx)
