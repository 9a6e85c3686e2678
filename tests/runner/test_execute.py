"""The runner end to end on hand-built suites: recorded outputs, providers, errors, order, cache."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from evalh.model import (
    AssertionSpec,
    Prompt,
    ProviderChoice,
    ProviderResponse,
    ProviderSpec,
    RunOptions,
    Status,
    Suite,
    TestCase,
)
from evalh.runner import services
from evalh.runner.execute import _MIN_IN_FLIGHT, _each, run_suite
from evalh.runner.plan import plan_jobs

NO_CACHE = RunOptions(cache=False)


def recorded(index: int, output: object, *asserts: AssertionSpec, threshold: float | None = None) -> TestCase:
    return TestCase(
        index=index,
        output=output,
        has_output=True,
        asserts=tuple(asserts),
        threshold=threshold,
        description=f"t{index}",
    )


def test_recorded_outputs_are_graded_in_order() -> None:
    suite = Suite(
        tests=(
            recorded(0, "hello world", AssertionSpec(type="contains", value="hello")),
            recorded(1, "bye", AssertionSpec(type="contains", value="hello")),
            recorded(2, "bye", AssertionSpec(type="contains", value="hello", negate=True)),
            recorded(3, "x"),
        )
    )
    run = run_suite(suite, NO_CACHE)
    assert [r.status for r in run.results] == [Status.PASS, Status.FAIL, Status.PASS, Status.PASS]
    assert [r.test.index for r in run.results] == [0, 1, 2, 3]
    assert run.results[1].reason == "contains: Output does not contain 'hello'"
    assert run.results[3].reason == "No assertions"
    assert run.pass_rate == 75.0
    assert not run.interrupted


def test_assert_set_children_follow_the_same_rules() -> None:
    children = (
        AssertionSpec(type="contains", value="a"),
        AssertionSpec(type="contains", value="zzz", negate=True),
        AssertionSpec(type="contains", value="q", metric="child"),
    )
    set_spec = AssertionSpec(type="assert-set", children=children, threshold=0.6, metric="set")
    run = run_suite(Suite(tests=(recorded(0, "abc", set_spec),)), NO_CACHE)
    row = run.results[0]
    assert row.status is Status.PASS  # 2 of 3 children pass: 0.67 >= 0.6
    graded_set = row.assertions[0]
    assert [child.passed for child in graded_set.children] == [True, True, False]
    assert row.named_scores == {"set": 2 / 3, "child": 0.0}


def test_echo_provider_matrix_prompts_x_providers(tmp_path: Path) -> None:
    tests = (
        TestCase(index=0, vars={"name": "Ada"}, asserts=(AssertionSpec(type="icontains", value="ada"),)),
    )
    suite = Suite(
        tests=tests,
        prompts=(Prompt(raw="Hi {{name}}", label="p1"), Prompt(raw="Bye {{name}}", label="p2")),
        providers=(ProviderSpec(id="echo"), ProviderSpec(id="echo", label="echo-2")),
    )
    assert len(plan_jobs(suite, repeat=2)) == 8
    run = run_suite(suite, NO_CACHE)
    assert [r.output for r in run.results] == ["Hi Ada", "Bye Ada", "Hi Ada", "Bye Ada"]
    assert all(r.status is Status.PASS for r in run.results)
    assert {(r.provider_index, r.prompt_index) for r in run.results} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_provider_errors_become_error_rows_and_the_run_goes_on(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        if sys.argv[1] == "fail":
            sys.exit("upstream said no")
        print("ok:" + sys.argv[1])
    """),
        encoding="utf-8",
    )
    tests = tuple(
        TestCase(index=i, vars={"q": q}, asserts=(AssertionSpec(type="starts-with", value="ok"),))
        for i, q in enumerate(["a", "fail", "b"])
    )
    suite = Suite(
        tests=tests,
        prompts=(Prompt(raw="{{q}}", label="q"),),
        providers=(ProviderSpec(id=f"exec:{sys.executable} app.py"),),
        config_path=str(tmp_path / "evalh.yaml"),
    )
    run = run_suite(suite, NO_CACHE)
    assert [r.status for r in run.results] == [Status.PASS, Status.ERROR, Status.PASS]
    assert "upstream said no" in (run.results[1].error or "")
    assert run.results[1].assertions == ()
    assert run.results[0].latency_ms is not None and run.results[0].latency_ms > 0


class _CrashingProvider:
    """A provider with a bug: anything but "ok" makes ``complete`` raise."""

    id = "buggy"

    async def complete(self, prompt: object, context: object) -> ProviderResponse:
        if prompt != "ok":
            raise ValueError(f"cannot parse {prompt!r}")
        return ProviderResponse(output="ok")


def test_a_provider_that_crashes_fails_its_row_not_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "build_provider", lambda spec: _CrashingProvider())
    tests = tuple(
        TestCase(index=i, vars={"q": q}, asserts=(AssertionSpec(type="equals", value="ok"),))
        for i, q in enumerate(["ok", "boom", "ok"])
    )
    suite = Suite(
        tests=tests, prompts=(Prompt(raw="{{q}}", label="q"),), providers=(ProviderSpec(id="buggy"),)
    )
    run = run_suite(suite, NO_CACHE)
    assert [r.status for r in run.results] == [Status.PASS, Status.ERROR, Status.PASS]
    assert run.results[1].error == "buggy failed: ValueError: cannot parse 'boom'"


def test_python_provider_and_usage_roll_up(tmp_path: Path) -> None:
    (tmp_path / "provider.py").write_text(
        textwrap.dedent("""
        def call_api(prompt, options, context):
            return {"output": prompt[::-1], "tokenUsage": {"prompt": 3, "completion": 2}}
    """),
        encoding="utf-8",
    )
    suite = Suite(
        tests=(TestCase(index=0, vars={"w": "abc"}, asserts=(AssertionSpec(type="equals", value="cba"),)),),
        prompts=(Prompt(raw="{{w}}", label="w"),),
        providers=(ProviderSpec(id="python:provider.py"),),
        config_path=str(tmp_path / "evalh.yaml"),
    )
    run = run_suite(suite, NO_CACHE)
    assert run.results[0].status is Status.PASS
    usage = dict((u.provider, u.usage) for u in run.provider_usage)["python:provider.py"]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.requests) == (3, 2, 5, 1)


def test_similar_on_the_local_model_is_prefetched_in_bulk() -> None:
    spec = AssertionSpec(type="similar", value="Paris is the capital of France.", threshold=0.9)
    unrelated = AssertionSpec(
        type="similar", value="Bananas are rich in potassium.", negate=True, threshold=0.3
    )
    suite = Suite(tests=(recorded(0, "The capital city of France is Paris.", spec, unrelated),))
    run = run_suite(suite, NO_CACHE)
    row = run.results[0]
    assert row.status is Status.PASS, row.reason
    assert row.assertions[0].score > 0.9
    local = dict((u.provider, u.usage) for u in run.provider_usage)["local"]
    assert local.texts == 3  # the output once, two references


def test_embedding_provider_override_by_test_options() -> None:
    spec = AssertionSpec(type="similar", value="alpha beta gamma", threshold=0.99)
    test = TestCase(
        index=0,
        output="alpha beta gamma",
        has_output=True,
        asserts=(spec,),
        provider=ProviderChoice(embedding=ProviderSpec(id="fake")),
    )
    run = run_suite(Suite(tests=(test,)), NO_CACHE)
    assert run.results[0].status is Status.PASS
    assert [u.provider for u in run.provider_usage] == ["fake"]


def test_rows_start_in_plan_order_and_a_bounded_number_are_in_flight() -> None:
    started: list[int] = []
    running = peak = 0

    async def work(item: int) -> None:
        nonlocal running, peak
        started.append(item)
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        running -= 1

    asyncio.run(_each(range(10), work, 3))
    assert (started, peak) == (list(range(10)), 3)


def test_a_run_with_more_rows_than_are_in_flight_at_once_keeps_every_row_in_order() -> None:
    count = _MIN_IN_FLIGHT + 77
    contains = [AssertionSpec(type="contains", value=str(i)) for i in range(count)]
    tests = tuple(recorded(i, f"answer {i}", spec) for i, spec in enumerate(contains))
    result = run_suite(Suite(tests=tests), NO_CACHE)
    assert [row.test.index for row in result.results] == list(range(count))
    assert all(row.status is Status.PASS for row in result.results)


def test_rows_of_a_run_share_their_equal_reasons() -> None:
    spec = AssertionSpec(type="contains", value="hello")
    run = run_suite(Suite(tests=(recorded(0, "bye", spec), recorded(1, "bye!", spec))), NO_CACHE)
    first, second = run.results
    assert first.reason == "contains: Output does not contain 'hello'" and first.reason is second.reason
    assert first.assertions[0].reason is second.assertions[0].reason


def test_each_row_id_is_a_distinct_uuid4_in_hex() -> None:
    """Row ids are spelled as uuid.uuid4().hex: 32 lower-case hex digits, version 4, RFC 4122 variant."""
    suite = Suite(tests=tuple(recorded(index, "x") for index in range(2000)))
    ids = [r.id for r in run_suite(suite, NO_CACHE).results]
    assert len(set(ids)) == len(ids)
    for row_id in ids:
        parsed = uuid.UUID(row_id)
        assert parsed.hex == row_id
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
