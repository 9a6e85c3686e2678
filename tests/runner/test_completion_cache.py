"""Completions through the runner's SQLite cache, against a loopback OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalh.model import AssertionSpec, Prompt, ProviderSpec, RunOptions, Status, Suite, TestCase
from evalh.runner.cache import cache_dir
from evalh.runner.execute import run_suite
from tests.loopback import LoopbackServer, Reply, Request

API_KEY = "sk-secret-completion-key"


def chat_reply(request: Request) -> Reply:
    question = request.json["messages"][-1]["content"]
    return Reply.json(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": request.json["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"echo: {question}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }
    )


def suite_for(loopback: LoopbackServer, **config: Any) -> Suite:
    provider = ProviderSpec(
        id="openai:chat:tiny", config={"apiBaseUrl": loopback.url + "/v1", "apiKey": API_KEY, **config}
    )
    tests = tuple(
        TestCase(index=i, vars={"q": q}, asserts=(AssertionSpec(type="contains", value=q),))
        for i, q in enumerate(["alpha", "beta"])
    )
    return Suite(tests=tests, prompts=(Prompt(raw="{{q}}", label="q"),), providers=(provider,))


def test_a_second_run_is_served_from_the_cache(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    suite = suite_for(loopback)
    first = run_suite(suite, RunOptions())
    assert [r.status for r in first.results] == [Status.PASS, Status.PASS]
    assert len(loopback.requests) == 2 and not any(r.cached for r in first.results)
    second = run_suite(suite, RunOptions())
    assert len(loopback.requests) == 2  # nothing new sent
    assert [r.output for r in second.results] == ["echo: alpha", "echo: beta"]
    assert all(r.cached for r in second.results)
    usage = {u.provider: u.usage for u in second.provider_usage}["openai:chat:tiny"]
    assert (usage.requests, usage.cached) == (0, 2)
    stored = b"".join(p.read_bytes() for p in cache_dir().glob("cache.sqlite3*"))
    assert API_KEY.encode() not in stored


def test_no_cache_and_repeat_call_the_server_every_time(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    suite = suite_for(loopback)
    run_suite(suite, RunOptions(cache=False))
    run_suite(suite, RunOptions(cache=False))
    assert len(loopback.requests) == 4
    run_suite(suite, RunOptions(repeat=2))  # promptfoo: repeat > 1 disables the cache
    assert len(loopback.requests) == 8


def test_sampling_temperature_is_not_cached_unless_asked(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    run_suite(suite_for(loopback, temperature=0.7), RunOptions())
    run_suite(suite_for(loopback, temperature=0.7), RunOptions())
    assert len(loopback.requests) == 4
    run_suite(suite_for(loopback, temperature=0.7, cache=True), RunOptions())
    run_suite(suite_for(loopback, temperature=0.7, cache=True), RunOptions())
    assert len(loopback.requests) == 6


def test_errors_are_not_cached(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route(
        "POST", "/v1/chat/completions", lambda _r: Reply.json({"error": {"message": "bad model"}}, 400)
    )
    first = run_suite(suite_for(loopback), RunOptions())
    assert [r.status for r in first.results] == [Status.ERROR, Status.ERROR]
    assert "bad model" in (first.results[0].error or "")
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    second = run_suite(suite_for(loopback), RunOptions())
    assert [r.status for r in second.results] == [Status.PASS, Status.PASS]
    assert cache_dir() == tmp_path / "evalh-cache"  # the autouse fixture keeps the user's cache out
