"""Python callables in an evalh.evaluate mapping: a provider, a python assertion, a transform; sync and
async, in-process, their exceptions and timeouts ERROR rows, named by their qualified name in reports."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalh
from evalh.model import Status


def shout(prompt: str) -> str:
    return prompt.upper()


async def shout_later(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"output": f"{prompt}! ({context['vars']['name']})", "tokenUsage": {"prompt": 2, "completion": 3}}


def says_hi(output: str) -> bool:
    return "HI" in output


async def scores_length(output: str, context: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"pass": True, "score": min(len(output) / 10, 1.0), "reason": f"{len(output)} characters"}


def _rows(result: evalh.RunResult) -> list[tuple[str, str, str, Any]]:
    return [(row.provider.id, row.provider.display, row.status.value, row.output) for row in result.rows]


def test_sync_and_async_providers_are_named_by_their_callable(tmp_path: Path) -> None:
    result = evalh.evaluate(
        {
            "prompts": ["hi {{name}}"],
            "providers": [shout, {"id": shout_later, "label": "later"}],
            "tests": [{"vars": {"name": "ada"}}],
        },
        outputs=[tmp_path / "r.json"],
    )
    assert _rows(result) == [
        ("shout", "shout", "PASS", "HI ADA"),
        ("shout_later", "later", "PASS", "hi ada! (ada)"),
    ]
    assert result.rows[1].usage.total_tokens == 5
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [row["provider"]["id"] for row in report["results"]["results"]] == ["shout", "shout_later"]
    assert report["results"]["results"][1]["provider"]["label"] == "later"


def test_sync_and_async_assertions_direct_or_as_a_python_value() -> None:
    result = evalh.evaluate(
        {
            "prompts": ["hi {{name}}"],
            "providers": [shout],
            "tests": [
                {"vars": {"name": "ada"}, "assert": [says_hi, {"type": "python", "value": scores_length}]},
                {"vars": {"name": "bo"}, "assert": [{"type": "not-python", "value": says_hi}]},
            ],
        }
    )
    first, second = result.rows
    assert [(g.spec.type, g.spec.value, g.passed, g.score) for g in first.assertions] == [
        ("python", "callable:says_hi", True, 1.0),
        ("python", "callable:scores_length", True, 0.6),
    ]
    assert first.assertions[1].reason == "6 characters"
    assert second.status is Status.FAIL  # not-python: "HI BO" says hi


def test_transforms_of_a_test_and_of_a_provider_sync_and_async() -> None:
    async def exclaim(output: str, context: dict[str, Any]) -> str:
        return output + "!"

    result = evalh.evaluate(
        {
            "prompts": ["hi {{name}}"],
            "providers": [{"id": shout, "transform": lambda output: output.replace(" ", "_")}],
            "tests": [
                {"vars": {"name": "ada"}, "options": {"transform": exclaim}},
                {"vars": {"name": "bo"}, "options": {"transform": str.lower}},
            ],
        }
    )
    assert [row.output for row in result.rows] == ["HI_ADA!", "hi_bo"]
    assert all(row.status is Status.PASS for row in result.rows)


def _raises(kind: str) -> Callable[..., Any]:
    def broken(*args: Any) -> Any:
        raise RuntimeError(f"{kind} broke")

    return broken


@pytest.mark.parametrize("where", ["provider", "assertion", "transform", "async provider"])
def test_an_exception_in_a_callable_is_an_error_row_naming_it(where: str) -> None:
    async def broken_async(prompt: str) -> str:
        raise KeyError("missing")

    provider: Any = broken_async if where == "async provider" else shout
    test: dict[str, Any] = {"vars": {"name": "ada"}}
    if where == "provider":
        provider = _raises("provider")
    elif where == "assertion":
        test["assert"] = [_raises("assertion")]
    elif where == "transform":
        test["options"] = {"transform": _raises("transform")}
    result = evalh.evaluate({"prompts": ["hi {{name}}"], "providers": [provider], "tests": [test]})
    (row,) = result.rows
    assert row.status is Status.ERROR
    expected = {
        "provider": "_raises.<locals>.broken raised RuntimeError: provider broke",
        "assertion": "python assertion _raises.<locals>.broken raised RuntimeError: assertion broke",
        "transform": "_raises.<locals>.broken raised RuntimeError: transform broke",
        "async provider": "broken_async raised KeyError: 'missing'",
    }[where]
    assert expected in (row.error or ""), row.error


def test_a_callable_that_takes_too_long_is_an_error_row() -> None:
    never = asyncio.Event()

    async def waits(prompt: str) -> str:
        await never.wait()  # nothing sets it: only the timeout ends the call
        return prompt

    config = {
        "prompts": ["x"],
        "providers": [{"id": waits, "config": {"timeoutMs": 50}}],
        "tests": [{"assert": [{"type": "equals", "value": "x"}]}],
    }
    (row,) = evalh.evaluate(config).rows
    assert row.status is Status.ERROR
    assert "waits took longer than 0.05 s and was abandoned" in (row.error or "")


def test_callables_work_inside_a_running_event_loop() -> None:
    async def main() -> evalh.RunResult:
        config = {"prompts": ["hi"], "providers": [shout_later], "tests": [{"vars": {"name": "ada"}}]}
        return evalh.evaluate(config)

    (row,) = asyncio.run(main()).rows
    assert (row.status, row.output) == (Status.PASS, "hi! (ada)")


def test_reports_name_callables_never_by_repr(tmp_path: Path) -> None:
    token = "planted-closure-token-4242"

    def make_provider() -> Callable[[str], str]:
        def answer(prompt: str) -> str:
            return "ok" if token else "no"  # a closure over a secret-looking value

        return answer

    same_name = [lambda o: True, lambda o: "ok" in o]
    result = evalh.evaluate(
        {"prompts": ["x"], "providers": [make_provider()], "tests": [{"assert": same_name}]},
        outputs=[tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.html"],
    )
    lambdas = "callable:test_reports_name_callables_never_by_repr.<locals>.<lambda>"
    assert [g.spec.value for g in result.rows[0].assertions] == [lambdas, f"{lambdas} #2"]
    assert result.rows[0].provider.id.endswith("make_provider.<locals>.answer")
    for name in ("r.json", "r.md", "r.html"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert token not in text and "<function" not in text and "0x" not in text.split("aggregates")[0]


def test_a_callable_provider_is_called_again_with_the_cache_on() -> None:
    calls: list[str] = []

    def counted(prompt: str) -> str:
        calls.append(prompt)
        return prompt

    config = {"prompts": ["{{n}}"], "providers": [counted], "tests": [{"vars": {"n": "1"}}]}
    evalh.evaluate(config)
    evalh.evaluate(config, cache=True)
    assert calls == ["1", "1"]


def test_a_callable_where_evalh_takes_none_or_on_another_type_is_a_located_error() -> None:
    with pytest.raises(evalh.ConfigError) as vars_error:
        evalh.evaluate({"prompts": ["x"], "providers": ["echo"], "tests": [{"vars": {"f": shout}}]})
    assert "tests[0].vars.f" in str(vars_error.value) and "shout" in str(vars_error.value)
    with pytest.raises(evalh.ConfigError) as type_error:
        evalh.evaluate(
            {
                "prompts": ["x"],
                "providers": ["echo"],
                "tests": [{"assert": [{"type": "contains", "value": shout}]}],
            }
        )
    assert "tests[0].assert[0].value" in str(type_error.value)
    with pytest.raises(evalh.ConfigError) as schema_error:  # the rest is validated as a file is
        evalh.evaluate(
            {"prompts": ["x"], "providers": [shout], "tests": [{"assert": [says_hi, {"type": "contans"}]}]}
        )
    assert "tests[0].assert[1].type" in str(schema_error.value)


def test_a_yaml_config_cannot_reach_a_callable_of_another_run(tmp_path: Path) -> None:
    evalh.evaluate({"prompts": ["x"], "providers": [shout], "tests": [{}]})
    with pytest.raises(evalh.ConfigError) as error:
        evalh.evaluate({"prompts": ["x"], "providers": ["shout"], "tests": [{}]})
    assert "unknown provider id 'shout'" in str(error.value)


def test_a_suite_keeps_its_callables_and_runs_again() -> None:
    calls: list[str] = []

    def counted(prompt: str) -> str:
        calls.append(prompt)
        return prompt

    first = evalh.evaluate({"prompts": ["hi"], "providers": [counted], "tests": [{"assert": [says_hi]}]})
    again = evalh.evaluate(first.run.suite)
    assert calls == ["hi", "hi"]
    assert [row.status for row in again.rows] == [Status.FAIL]  # says_hi ran again: "hi" is not "HI"
    assert again.rows[0].assertions[0].reason == "Python assertion returned False"


def test_check_takes_a_function_as_an_assertion() -> None:
    row = evalh.check("HI THERE", [says_hi, {"type": "contains", "value": "THERE"}])
    assert [graded.passed for graded in row.assertions] == [True, True]
    with pytest.raises(evalh.CheckFailed) as failure:
        evalh.check("hello", [says_hi])
    assert "[FAIL] python" in str(failure.value)


def test_a_vars_transform_function_runs_when_the_config_loads() -> None:
    def greet(variables: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        return {"greeting": f"hi {variables['name']}"}

    config = {
        "prompts": ["{{greeting}}"],
        "providers": ["echo"],
        "tests": [{"vars": {"name": "ada"}, "options": {"transformVars": greet}}],
    }
    assert [row.output for row in evalh.evaluate(config).rows] == ["hi ada"]


def test_a_run_going_on_in_another_thread_cannot_reach_this_runs_functions() -> None:
    started, release = threading.Event(), threading.Event()

    def holds(prompt: str) -> str:
        started.set()
        release.wait(30)
        return prompt

    first: list[evalh.RunResult] = []
    thread = threading.Thread(
        target=lambda: first.append(evalh.evaluate({"prompts": ["x"], "providers": [holds], "tests": [{}]}))
    )
    thread.start()
    try:
        assert started.wait(30)  # the first run is inside its provider call: its names are live
        name = holds.__qualname__  # the provider id the first run knows
        with pytest.raises(evalh.ConfigError, match="unknown provider id") as error:
            evalh.evaluate({"prompts": ["x"], "providers": [name], "tests": [{}]})
        assert name in str(error.value)
    finally:
        release.set()
        thread.join()
    assert [row.output for row in first[0].rows] == ["x"]
