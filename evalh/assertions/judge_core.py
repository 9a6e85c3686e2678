"""Calling the grader for the model-graded assertions: resolution, deterministic defaults, replies.

The grader is ``ctx.provider("text")``: the assertion's ``provider`` > the test's ``options.provider``
(its ``text`` key in a map; defaultTest's merged in) > ``--grader`` / the suite default. Nothing is sent
anywhere when none is configured: the assertion is an ERROR naming how to set one. Graders run with
``temperature: 0`` and ``seed: 42`` unless the grader's own config sets them.

Every prompt sent and every raw reply go into the result's ``details`` (``grading_prompt``,
``grader_reply``, and ``steps`` for multi-step judges), so reports show what the judge saw and said.
A grader failure (transport error, empty or unparsable reply) is ``AssertionResult.failure``: an ERROR,
never inverted into a pass by ``not-``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.judge_prompts import Messages, PromptProblem, load_prompt, render_messages
from evalh.assertions.judge_votes import (
    combine_judges,
    combine_samples,
    judge_aggregate,
    judge_identity,
    judge_samples,
    sample_spec,
)
from evalh.assertions.structured import extract_json_objects
from evalh.model import AssertionResult, Measurement, ProviderSpec, Usage

__all__ = [
    "GRADER_DEFAULTS",
    "GraderFailure",
    "Grading",
    "as_bool",
    "as_number",
    "custom_prompt",
    "graded",
    "grader_spec",
    "query_of",
    "verdict_object",
]

GRADER_DEFAULTS: Mapping[str, Any] = {"temperature": 0, "seed": 42}
_TRUTHY = re.compile(r"^\s*(true|yes|pass|y)\s*$", re.IGNORECASE)


class GraderFailure(Exception):
    """The grader could not give a verdict (transport error, empty or unparsable reply)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def grader_spec(spec: ProviderSpec) -> ProviderSpec:
    """``spec`` with temperature 0 and seed 42 unless its config sets them."""
    return dataclasses.replace(spec, config={**GRADER_DEFAULTS, **spec.config})


def verdict_object(
    reply: Any,
    keys: Sequence[str],
    quoted: Sequence[Mapping[str, Any]] = (),
    planted: Sequence[Mapping[str, Any]] = (),
) -> Mapping[str, Any] | None:
    """The grader's verdict: an object reply as is; in a text reply, the JSON object holding ``keys``
    (any object when none holds them).

    Objects of the output under test (``planted``) are never a verdict: an echoing or obedient grader
    repeating them would let the output grade itself, so a reply holding nothing else raises
    :class:`GraderFailure`.

    A reply may quote the format example of its prompt (``quoted``) before its verdict: objects that
    repeat the prompt are never a verdict either, and a reply holding nothing else (an echo) raises
    :class:`GraderFailure`. Among the rest, the last is taken when they agree on ``keys``; two that
    disagree raise :class:`GraderFailure` naming both, since trusting either would be a guess. None
    when the reply holds no JSON object.
    """
    if isinstance(reply, Mapping):
        return reply
    if not isinstance(reply, str):
        return None
    found = [o for o in extract_json_objects(reply) if isinstance(o, Mapping)]
    objects: list[Mapping[str, Any]] = [o for o in found if o not in planted]
    if found and not objects:
        raise GraderFailure(
            f"the grader's reply only repeats JSON from the output under test, not a verdict of its own: "
            f"{_short(reply)}"
        )
    candidates = [obj for obj in objects if any(key in obj for key in keys)] or objects
    fresh = [obj for obj in candidates if obj not in quoted]
    if candidates and not fresh:
        raise GraderFailure(
            "the grader's reply holds no verdict of its own: its JSON only repeats the prompt "
            f"(is the grader echoing it?): {_short(_compact(candidates[-1]))}"
        )
    if not fresh:
        return None
    last = fresh[-1]
    for other in fresh[:-1]:
        if _verdict_keys(other, keys) != _verdict_keys(last, keys):
            raise GraderFailure(
                f"the grader's reply holds conflicting verdicts: {_short(_compact(other))} and "
                f"{_short(_compact(last))}"
            )
    return last


def _verdict_keys(obj: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {key: obj[key] for key in keys if key in obj}


def _compact(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "), default=str)


def prompt_objects(messages: Any) -> list[Mapping[str, Any]]:
    """The JSON objects of a rendered grading prompt: its messages and the format examples in them."""
    if isinstance(messages, str):
        return [obj for obj in extract_json_objects(messages) if isinstance(obj, Mapping)]
    found: list[Mapping[str, Any]] = []
    for message in messages or ():
        if isinstance(message, Mapping):
            found.append(dict(message))  # an echo of the message list itself
            content = message.get("content")
            if isinstance(content, str):
                found.extend(prompt_objects(content))
    return found


def as_bool(value: Any) -> bool:
    """promptfoo's reading of a verdict: a bool as is, else true iff it reads true/yes/pass/y."""
    if isinstance(value, bool):
        return value
    return bool(_TRUTHY.match(str(value)))


def as_number(value: Any) -> float | None:
    """A finite number, or a numeric string, as a float; anything else (NaN, "inf") None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def query_of(ctx: AssertionContext) -> str:
    """The question the output answers: ``vars.query``, else the rendered prompt (its last user turn)."""
    query = ctx.vars.get("query")
    if isinstance(query, str) and query:
        return query
    prompt = ctx.prompt
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        users = [m.get("content") for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        if users and isinstance(users[-1], str):
            return users[-1]
    return ""


def custom_prompt(ctx: AssertionContext) -> tuple[Mapping[str, Any], ...] | None:
    """The assertion's ``rubricPrompt``, else the test's ``options.rubricPrompt``, loaded; or None."""
    raw = ctx.spec.rubric_prompt
    if raw is None:
        raw = ctx.test.options.get("rubricPrompt")
    return None if raw is None else load_prompt(raw, ctx.config_dir)


@dataclass
class Grading:
    """One assertion's conversation with its grader: the calls made, their usage, for ``details``."""

    ctx: AssertionContext
    grader: ProviderSpec
    named: ProviderSpec | None = None  # the grader as configured (before sample seeds), for identity
    steps: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    templates: list[Sequence[Mapping[str, Any]]] = field(default_factory=list)  # for the judge's identity

    def variables(self, **extra: Any) -> dict[str, Any]:
        """Template variables: the test's vars, the output, the query, and ``extra``."""
        output = self.ctx.output_text
        query = query_of(self.ctx)
        return {
            **self.ctx.vars,
            "vars": dict(self.ctx.vars),
            "output": output,
            "completion": output,
            "input": query,
            "query": query,
            "prompt": query,
            **extra,
        }

    async def ask(self, template: Sequence[Mapping[str, Any]], variables: Mapping[str, Any]) -> Any:
        """Render ``template``, send it, record it; the raw reply (a string, or an object)."""
        messages: Messages = render_messages(template, variables)
        self.templates.append(template)
        response = await self.ctx.services.complete(self.grader, messages)
        self.usage = self.usage + response.usage
        attempts = 0 if response.cached else int(response.metadata.get("attempts", 1))
        self.steps.append({"prompt": messages, "reply": response.output, "attempts": attempts})
        if response.error:
            raise GraderFailure(f"the grader {self.grader.display} failed: {response.error}")
        output = response.output
        if output is None or (isinstance(output, str) and not output.strip()):
            raise GraderFailure(f"the grader {self.grader.display} returned no output")
        return output

    async def ask_json(
        self, template: Sequence[Mapping[str, Any]], variables: Mapping[str, Any], keys: Sequence[str]
    ) -> Mapping[str, Any]:
        """Like :meth:`ask`, then the reply's verdict object holding ``keys`` (GraderFailure if none)."""
        reply = await self.ask(template, variables)
        parsed = self.verdict(reply, keys)
        if parsed is None:
            raise GraderFailure(f"could not extract JSON from the grader's reply: {_short(reply)}")
        return parsed

    def verdict(self, reply: Any, keys: Sequence[str]) -> Mapping[str, Any] | None:
        """:func:`verdict_object` of ``reply``, knowing the prompt it answers (for quoted examples)."""
        prompt = self.steps[-1]["prompt"] if self.steps else ()
        return verdict_object(reply, keys, prompt_objects(prompt), prompt_objects(self.ctx.output_text))

    def details(self, **extra: Any) -> dict[str, Any]:
        last = self.steps[-1] if self.steps else {}
        details: dict[str, Any] = {
            "grader": self.grader.display,
            "grading_prompt": last.get("prompt"),
            "grader_reply": last.get("reply"),
            "grader_attempts": sum(step["attempts"] for step in self.steps),  # 0: all from the cache
            "judge": self.identity(),
            **extra,
        }
        if len(self.steps) > 1:
            details["steps"] = [{"prompt": s["prompt"], "reply": s["reply"]} for s in self.steps]
        return details

    def identity(self) -> dict[str, str]:
        """Which judge this is (see :func:`judge_identity`); sample seeds aside, every sample's is one."""
        return judge_identity(self.named or self.grader, self.templates)

    def measured(self, value: float, subject: str, **fields: Any) -> Measurement:
        """A grader's figure for scoring.py; ``fields``: Measurement's (suffix, plain, verdict,
        compared) and anything else goes into ``details``."""
        known = {key: fields.pop(key) for key in ("suffix", "plain", "verdict", "compared") if key in fields}
        return Measurement(value, subject, details=self.details(**fields), usage=self.usage, **known)

    def failure(self, reason: str) -> AssertionResult:
        return dataclasses.replace(AssertionResult.failure(reason, **self.details()), usage=self.usage)


def _short(reply: Any, limit: int = 200) -> str:
    text = reply if isinstance(reply, str) else repr(reply)
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


JudgeFn = Callable[[AssertionContext, Grading], Awaitable[AssertionResult | Measurement]]


def no_grader_reason() -> str:
    return (
        "needs a grader model: set defaultTest.options.provider (for example "
        "openai:chat:gpt-4o-mini, or any OpenAI-compatible server such as Ollama or vLLM through "
        "config.apiBaseUrl), the assertion's provider, or --grader"
    )


def graded(fn: JudgeFn) -> Callable[[AssertionContext], Awaitable[AssertionResult | Measurement]]:
    """Resolve the grader(s), run ``fn`` (``samples`` times each), and turn grader or prompt problems
    into ERROR results; several graders or samples combine as :mod:`judge_votes` says."""

    @functools.wraps(fn)
    async def run(ctx: AssertionContext) -> AssertionResult | Measurement:
        choice = ctx.spec.provider
        graders = list(choice.models) if choice is not None and choice.models else []
        picked = ctx.provider("text")
        if not graders and picked is not None:
            graders = [picked]
        if not graders:
            return AssertionResult.failure(no_grader_reason())
        for grader in graders:
            capabilities = ctx.services.capabilities(grader)
            if capabilities and "text" not in capabilities:
                return AssertionResult.failure(
                    f"the grader {grader.display} cannot answer prompts (it offers "
                    f"{', '.join(capabilities)}); name a chat provider in options.provider.text"
                )
        samples = judge_samples(ctx)
        if len(graders) == 1 and samples == 1:
            return await _ask_once(fn, ctx, grader_spec(graders[0]), graders[0])
        import asyncio  # a run has it loaded; loading the judged families (validate) does not need it

        outcomes = await asyncio.gather(*(_ask_sampled(fn, ctx, grader, samples) for grader in graders))
        for outcome in outcomes:
            if isinstance(outcome, AssertionResult):
                return outcome  # a grader that could not answer makes the assertion an ERROR
        measured = [m for m in outcomes if isinstance(m, Measurement)]
        if len(measured) == 1:
            return measured[0]
        identities = [m.details.get("judge", {}) for m in measured]
        return combine_judges(measured, identities, judge_aggregate(ctx), ctx.threshold)

    return run


async def _ask_once(
    fn: JudgeFn, ctx: AssertionContext, grader: ProviderSpec, named: ProviderSpec
) -> AssertionResult | Measurement:
    """One conversation with ``grader`` (``named``: the grader as configured, for the judge's identity)."""
    grading = Grading(ctx=ctx, grader=grader, named=named)
    try:
        return await fn(ctx, grading)
    except (GraderFailure, PromptProblem) as problem:
        reason = problem.reason if isinstance(problem, GraderFailure) else str(problem)
        return grading.failure(reason)


async def _ask_sampled(
    fn: JudgeFn, ctx: AssertionContext, grader: ProviderSpec, samples: int
) -> AssertionResult | Measurement:
    """``samples`` distinct asks of one grader, combined (the first ERROR, if any, stands)."""
    base = grader_spec(grader)
    import asyncio

    outcomes = await asyncio.gather(
        *(_ask_once(fn, ctx, sample_spec(base, index), grader) for index in range(samples))
    )
    for outcome in outcomes:
        if isinstance(outcome, AssertionResult):
            return outcome
    measured = [m for m in outcomes if isinstance(m, Measurement)]
    return measured[0] if samples == 1 else combine_samples(measured, ctx.threshold)
