"""``conversation-relevance``: is each reply relevant to the conversation so far (promptfoo's
``src/assertions/conversationRelevance.ts`` and its matcher, from deepeval).

The conversation is ``vars._conversation`` as written in the test (a list of ``{input, output}`` turns),
else the one turn of this row (the rendered prompt and the output). For every turn, the grader sees the
window of up to ``config.windowSize`` turns ending at it (default 5) as user/assistant messages and answers
``{"verdict": "yes"|"no", "reason"}``; the score is the share of relevant windows, passing at the
threshold (default 0.5). When some window is not relevant, the grader is asked once more to sum up why
(only the reason depends on it). A custom ``rubricPrompt`` replaces the verdict prompt and sees the
test's vars and ``messages`` (the window's turns). Registered with the ``judged`` family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.judge_core import GraderFailure, Grading, custom_prompt, graded
from evalh.assertions.judge_prompts import CONVERSATION_RELEVANCE_PROMPT, CONVERSATION_RELEVANCE_REASON_PROMPT
from evalh.assertions.registry import UNUSED_VALUE, assertion
from evalh.model import Measurement

__all__: list[str] = []

DEFAULT_WINDOW_SIZE = 5
_NOT_RELEVANT = "Response is not relevant to the conversation context"
_CONFIG = {
    "windowSize": {
        "type": "integer",
        "minimum": 1,
        "description": "How many turns, ending at each one, the grader sees (default 5).",
    }
}


def _js_text(value: Any) -> str:
    """A turn's text as promptfoo puts it in a message: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _turns(ctx: AssertionContext) -> list[Mapping[str, Any]]:
    written = ctx.vars.get("_conversation")
    if isinstance(written, list) and written:
        return [turn if isinstance(turn, Mapping) else {} for turn in written]
    if not ctx.prompt:
        raise GraderFailure("conversation-relevance needs a prompt or vars._conversation")
    prompt = ctx.prompt if isinstance(ctx.prompt, str) else json.dumps(ctx.prompt, ensure_ascii=False)
    return [{"input": prompt, "output": ctx.output_text}]


def _messages(window: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    messages: list[dict[str, str]] = []
    for turn in window:
        messages.append({"role": "user", "content": _js_text(turn.get("input"))})
        messages.append({"role": "assistant", "content": _js_text(turn.get("output"))})
    return messages


async def _window_verdict(
    ctx: AssertionContext, grading: Grading, window: Sequence[Mapping[str, Any]]
) -> tuple[bool, str]:
    """Whether the window's last reply is relevant, and the grader's reason."""
    template = custom_prompt(ctx) or CONVERSATION_RELEVANCE_PROMPT
    shown = json.dumps(_messages(window), indent=2, ensure_ascii=False)
    variables = {**ctx.vars, "vars": dict(ctx.vars), "messages": list(window), "window": shown}
    reply = await grading.ask_json(template, variables, ("verdict",))
    verdict = reply.get("verdict")
    if verdict not in ("yes", "no"):
        raise GraderFailure(f"the conversation relevance grader returned an invalid verdict: {verdict!r}")
    relevant = verdict == "yes"
    default = "Response is relevant to the conversation context" if relevant else _NOT_RELEVANT
    return relevant, str(reply.get("reason") or default)


async def _summary(grading: Grading, score: float, irrelevancies: list[str], fallback: str) -> str:
    """The grader's summary of why windows were irrelevant; ``fallback`` when it gives none."""
    shown = json.dumps(irrelevancies, indent=2, ensure_ascii=False)
    number = str(int(score)) if score.is_integer() else repr(score)  # JavaScript's String(score)
    variables = {"score": number, "irrelevancies": shown}
    try:
        reply = await grading.ask(CONVERSATION_RELEVANCE_REASON_PROMPT, variables)
    except GraderFailure:
        return fallback
    parsed = grading.verdict(reply, ("reason",))
    return str(parsed["reason"]) if parsed and parsed.get("reason") else fallback


@assertion(
    "conversation-relevance",
    family="judged",
    description="Share of the conversation's replies the grader finds relevant to the turns before them "
    "(vars._conversation, else this prompt and output)",
    needs=("text",),
    default_threshold=0.5,
    threshold_meaning="min share of relevant replies",
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=UNUSED_VALUE,
    config_schema=_CONFIG,
)
@graded
async def conversation_relevance(ctx: AssertionContext, grading: Grading) -> Measurement:
    turns = _turns(ctx)
    size = int(ctx.spec.config.get("windowSize") or DEFAULT_WINDOW_SIZE)
    relevant = 0
    irrelevancies: list[str] = []
    for index in range(len(turns)):
        ok, reason = await _window_verdict(ctx, grading, turns[max(0, index - size + 1) : index + 1])
        relevant += ok
        if not ok and reason != _NOT_RELEVANT:
            irrelevancies.append(reason)
    score = relevant / len(turns)
    subject = f"{relevant} out of {len(turns)} conversation windows were relevant"
    if irrelevancies and score < 1:
        subject = await _summary(grading, score, irrelevancies, subject)
    return grading.measured(score, subject, irrelevancies=irrelevancies)
