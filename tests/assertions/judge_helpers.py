"""Run a model-graded assertion against a loopback grader, through the runner's real services."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.model import AssertionResult, GradedAssertion, ProviderChoice, ProviderSpec
from evalh.runner.cache import Cache
from evalh.runner.grading import positive_verdict
from evalh.runner.scoring import finalize
from evalh.runner.services import ProviderPool, RunServices
from tests.assertions.helpers import definition_of, make_context
from tests.loopback import LoopbackServer, Reply, Request

__all__ = [
    "OPENAI_PATH",
    "SECRET",
    "assert_no_secret",
    "grader_messages",
    "judge",
    "openai_grader",
    "openai_text",
]

SECRET = "sk-judge-secret-4f3e2d1c"
OPENAI_PATH = "/v1/chat/completions"


def openai_text(content: str) -> Reply:
    return Reply.json(
        {
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }
    )


def openai_grader(server: LoopbackServer, **config: Any) -> ProviderSpec:
    base = {"apiBaseUrl": server.url + "/v1", "apiKey": SECRET, "retryBaseDelayS": 0.01}
    return ProviderSpec(id="openai:chat:judge-model", config={**base, **config})


def judge(
    assertion_type: str,
    grader: ProviderSpec | None,
    *,
    value: Any = None,
    output: Any = "Hello, world!",
    threshold: float | None = None,
    vars: Mapping[str, Any] | None = None,
    test_options: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    rubric_prompt: Any = None,
    prompt: Any = "Say hello",
    provider: ProviderChoice | None = None,
    config_dir: Path | None = None,
    config: Mapping[str, Any] | None = None,
) -> tuple[AssertionResult, GradedAssertion]:
    """Run one assertion with real services; (positive-form result, finalized verdict)."""
    services = RunServices(ProviderPool(), Cache.open(False))
    choice = provider if provider is not None else (ProviderChoice(default=grader) if grader else None)
    ctx = make_context(
        assertion_type,
        value=value,
        output=output,
        threshold=threshold,
        vars=vars,
        test_options=test_options,
        services=services,
        provider=choice,
        prompt=prompt,
        config_dir=config_dir,
        config=config,
    )
    spec = dataclasses.replace(ctx.spec, rubric_prompt=rubric_prompt)
    ctx = dataclasses.replace(
        ctx, spec=spec, test=dataclasses.replace(ctx.test, metadata=dict(metadata or {}))
    )
    result = asyncio.run(_run(ctx, services))
    return result, finalize(spec, result)


async def _run(ctx: AssertionContext, services: RunServices) -> AssertionResult:
    try:
        return await positive_verdict(definition_of(ctx.spec.base_type), ctx)
    finally:
        await services.pool.aclose()


def assert_no_secret(result: AssertionResult, server: LoopbackServer) -> None:
    dumped = json.dumps([result.reason, result.details], default=str)
    assert SECRET not in dumped
    assert all(r.header("Authorization") == f"Bearer {SECRET}" for r in server.requests_to(OPENAI_PATH))


def grader_messages(request: Request) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = request.json["messages"]
    return messages
