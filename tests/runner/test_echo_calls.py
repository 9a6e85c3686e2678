"""The echo's call path: a provider that answers at once (providers.base.AnswersAtOnce) is called without
the concurrency gate, the timeout race and the in-flight mark, none of which could hold it back, and
every row still gets what any call gives it (latency, one request, the progress display's count)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.common import activity
from evalh.model import (
    AssertionSpec,
    Prompt,
    ProviderResponse,
    ProviderSpec,
    RunOptions,
    Status,
    Suite,
    TestCase,
)
from evalh.providers.base import CallContext
from evalh.runner.cache import Cache
from evalh.runner.execute import run_suite
from evalh.runner.services import ProviderPool, RunServices

ECHO = ProviderSpec(id="echo")


def _suite(rows: int) -> Suite:
    tests = tuple(
        TestCase(index=i, vars={"n": str(i)}, asserts=(AssertionSpec(type="contains", value=str(i)),))
        for i in range(rows)
    )
    return Suite(prompts=(Prompt(raw="row {{n}}", label="p"),), providers=(ECHO,), tests=tests)


def test_an_echo_run_counts_every_call_done_and_none_in_flight() -> None:
    activity.reset()
    run = run_suite(_suite(40), RunOptions(cache=False, max_concurrency=2))
    assert [row.status for row in run.results] == [Status.PASS] * 40
    assert [row.output for row in run.results] == [f"row {i}" for i in range(40)]
    (echo,) = activity.snapshot()
    assert (echo.name, echo.in_flight, echo.done, echo.failed) == ("echo", 0, 40, 0)
    assert all(row.latency_ms is not None and row.latency_ms >= 0 for row in run.results)
    assert all(row.usage.requests == 1 for row in run.results)
    (usage,) = run.provider_usage
    assert (usage.provider, usage.usage.requests) == ("echo", 40)


def test_only_a_provider_that_answers_at_once_skips_the_gate() -> None:
    pool = ProviderPool()
    assert pool.traits(ECHO).at_once
    assert not pool.traits(ProviderSpec(id="exec:python3 -c 'print(1)'")).at_once
    assert not pool.traits(ProviderSpec(id="http", config={"url": "http://127.0.0.1:9/x"})).at_once


class _Answers:
    """A provider that answers at once with ``answer``, or raises it."""

    answers_at_once = True

    def __init__(self, answer: ProviderResponse | Exception) -> None:
        self.answer = answer

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _called(answer: ProviderResponse | Exception) -> ProviderResponse:
    services = RunServices(ProviderPool(), Cache.open(False))
    spec = ProviderSpec(id="instant")
    return asyncio.run(services._call_at_once(_Answers(answer), spec, "hi", CallContext()))


def test_a_call_at_once_that_fails_is_a_row_error_and_counted_failed() -> None:
    activity.reset()
    raised = _called(ValueError("a provider bug"))
    assert raised.error == "instant failed: ValueError: a provider bug"
    errored = _called(ProviderResponse(error="refused"))
    assert errored.error == "refused" and errored.usage.requests == 1
    answered = _called(ProviderResponse(output="ok", latency_ms=3.0))
    assert (answered.output, answered.latency_ms, answered.usage.requests) == ("ok", 3.0, 1)
    (instant,) = activity.snapshot()
    assert (instant.in_flight, instant.done, instant.failed) == (0, 3, 2)
