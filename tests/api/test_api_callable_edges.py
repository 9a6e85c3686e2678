"""Python callables in an evalh.evaluate mapping, the shapes users pass beyond a plain function: one named
like a built-in provider, a generator, a class, a partial, a bound method, a ProviderResponse-shaped dict
holding an object; each row says what happened, and no function takes a built-in provider's place."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import evalh
from evalh.model import Status


def echo(prompt: str) -> str:  # the name of evalh's built-in echo provider
    return "from the function"


def http(prompt: str) -> str:  # and of the built-in http provider
    return "from http"


def numbers(prompt: str) -> Iterator[str]:
    yield prompt


class Bot:
    def reply(self, prompt: str) -> str:
        return f"bot: {prompt}"


def suffixed(prompt: str, suffix: str) -> str:
    return prompt + suffix


def suffixed_bang(prompt: str) -> str:
    return prompt + "!"


def holding_an_object(prompt: str) -> dict[str, Any]:
    return {"output": Bot(), "tokenUsage": {"prompt": 1, "completion": 1}}


def rows(result: evalh.RunResult) -> list[tuple[str, str, Any, str | None]]:
    return [(row.provider.id, row.status.value, row.output, row.error) for row in result.rows]


def test_a_function_named_like_a_built_in_provider_does_not_replace_it(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = evalh.evaluate(
        {
            "prompts": ["hi"],
            "providers": ["echo", echo, http],
            "tests": [{"assert": [{"type": "equals", "value": "hi"}]}],
        },
        outputs=[report],
    )
    assert [(provider, output) for provider, _, output, _ in rows(result)] == [
        ("echo", "hi"),  # the built-in echo provider (this row was the function's answer)
        ("echo #2", "from the function"),
        ("http #2", "from http"),
    ]
    written = json.loads(report.read_text(encoding="utf-8"))
    assert [row["provider"]["id"] for row in written["results"]["results"]] == ["echo", "echo #2", "http #2"]


def test_a_provider_returning_what_no_report_can_hold_is_an_error_row_naming_it() -> None:
    result = evalh.evaluate(
        {
            "prompts": ["hi"],
            "providers": [numbers, Bot, holding_an_object],
            "tests": [{"assert": [{"type": "contains", "value": "hi"}]}],
        }
    )
    assert [(provider, status, error) for provider, status, _, error in rows(result)] == [
        ("numbers", "ERROR", "numbers returned a generator, not a string or {output, ...}"),
        ("Bot", "ERROR", "Bot returned a Bot, not a string or {output, ...}"),
        (
            "holding_an_object",
            "ERROR",
            "holding_an_object returned {output: a Bot}, not a string or JSON data",
        ),
    ]


def test_partials_bound_methods_and_lambdas_are_providers() -> None:
    bot = Bot()
    result = evalh.evaluate(
        {
            "prompts": ["hi"],
            "providers": [
                functools.partial(suffixed, suffix="!"),
                bot.reply,
                lambda prompt: {"output": prompt * 2},
            ],
            "tests": [{"assert": [{"type": "contains", "value": "hi"}]}],
        }
    )
    assert [(provider, status, output) for provider, status, output, _ in rows(result)] == [
        ("partial", "PASS", "hi!"),
        ("Bot.reply", "PASS", "bot: hi"),
        (
            f"{test_partials_bound_methods_and_lambdas_are_providers.__qualname__}.<locals>.<lambda>",
            "PASS",
            "hihi",
        ),
    ]
    assert all(row.status is Status.PASS for row in result.rows)


def test_sync_provider_functions_run_as_many_at_once_as_max_concurrency() -> None:
    # 20 calls must be in flight together to pass the barrier; a pool of 16 threads broke it
    barrier = threading.Barrier(20, timeout=60)

    def waits_for_the_others(prompt: str) -> str:
        barrier.wait()
        return prompt

    result = evalh.evaluate(
        {
            "prompts": ["{{i}}"],
            "providers": [waits_for_the_others],
            "tests": [{"vars": {"i": i}} for i in range(20)],
        },
        max_concurrency=20,
    )
    assert (result.successes, result.errors) == (20, 0), result.rows[0].error


def test_tuples_hold_callables_where_lists_do() -> None:
    result = evalh.evaluate(
        {
            "prompts": ["{{x}}"],
            "providers": ("echo", suffixed_bang),
            "tests": ({"vars": {"x": "a"}, "assert": (lambda output: output.startswith("a"),)},),
        }
    )
    assert [(row.provider.id, row.status.value, row.output) for row in result.rows] == [
        ("echo", "PASS", "a"),
        ("suffixed_bang", "PASS", "a!"),
    ]
