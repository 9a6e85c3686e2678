"""One concurrency gate per provider identity, sized by ``config.maxConcurrency`` or ``-j``.

A loopback server counts the requests in flight. It holds each request until as many are in flight as
the gate should allow (or every request of the run has arrived), so a correct gate always reaches its
size and a wider one shows up in the peak: the assertions compare counters, never durations.
"""

from __future__ import annotations

import asyncio
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.model import ProviderSpec
from evalh.runner import services
from evalh.runner.cache import Cache
from evalh.runner.services import ProviderPool, RunServices
from tests.loopback import LoopbackServer, Reply, Request

# After the expected number is in flight, a request is held a little longer so that a gate wider than
# expected has the chance to let one more in (it only makes a broken gate easier to see).
_LINGER_S = 0.05
# Only a broken test waits this long: a correct gate fills up (or the run ends) much sooner.
_SAFETY_S = 20.0


class InFlight:
    """Counts requests in flight and their peak; holds each until ``expected`` are in or all arrived."""

    def __init__(self, expected: int, total: int) -> None:
        self.expected, self.total = expected, total
        self.active = self.arrived = self.peak = 0
        self._changed = threading.Condition()

    def hold(self) -> None:
        with self._changed:
            self.active += 1
            self.arrived += 1
            self.peak = max(self.peak, self.active)
            self._changed.notify_all()
            self._changed.wait_for(
                lambda: self.active >= self.expected or self.arrived >= self.total, timeout=_SAFETY_S
            )
        time.sleep(_LINGER_S)
        with self._changed:
            self.active -= 1
            self._changed.notify_all()


def _chat(counter: InFlight) -> Any:
    def answer(request: Request) -> Reply:
        counter.hold()
        question = request.json["messages"][-1]["content"]
        return Reply.json(
            {
                "choices": [{"index": 0, "message": {"role": "assistant", "content": question}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    return answer


def _embeddings(counter: InFlight) -> Any:
    def answer(request: Request) -> Reply:
        counter.hold()
        texts = request.json["input"]
        data = [{"index": i, "embedding": [1.0, float(len(text))]} for i, text in enumerate(texts)]
        return Reply.json({"data": data, "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    return answer


def _run(tmp_path: Path, config_text: str, *flags: str) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(config_text, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(config), "--no-cache", "--no-table", *flags])
    assert result.exit_code == 0, result.output


def _chat_config(loopback: LoopbackServer, rows: int, extra: str = "") -> str:
    tests = "".join(f"  - vars: {{q: question{i}}}\n" for i in range(rows))
    return (
        "prompts: ['{{q}}']\n"
        "providers:\n"
        "  - id: openai:chat:tiny\n"
        f"    config: {{apiBaseUrl: '{loopback.url}/v1', apiKey: sk-test{extra}}}\n"
        "defaultTest:\n  assert: [{type: starts-with, value: question}]\n"
        f"tests:\n{tests}"
    )


@pytest.mark.parametrize("jobs", [1, 4])
def test_completions_in_flight_never_exceed_dash_j(
    tmp_path: Path, loopback: LoopbackServer, jobs: int
) -> None:
    counter = InFlight(expected=jobs, total=8)
    loopback.route("POST", "/v1/chat/completions", _chat(counter))
    _run(tmp_path, _chat_config(loopback, rows=8), "-j", str(jobs))
    assert (counter.arrived, counter.peak) == (8, jobs)


def test_a_providers_max_concurrency_wins_over_dash_j(tmp_path: Path, loopback: LoopbackServer) -> None:
    counter = InFlight(expected=2, total=8)
    loopback.route("POST", "/v1/chat/completions", _chat(counter))
    _run(tmp_path, _chat_config(loopback, rows=8, extra=", maxConcurrency: 2"), "-j", "8")
    assert (counter.arrived, counter.peak) == (8, 2)


def _similar_config(loopback: LoopbackServer, rows: int) -> str:
    # Recorded outputs: the only requests are embeddings, one text per request (batchSize 1).
    tests = "".join(f"  - output: answer number {i}\n" for i in range(rows))
    return (
        "defaultTest:\n"
        "  options:\n"
        "    provider:\n"
        "      id: openai:embedding:tiny\n"
        f"      config: {{apiBaseUrl: '{loopback.url}/v1', apiKey: sk-test, batchSize: 1}}\n"
        "  assert: [{type: similar, value: reference, threshold: 0}]\n"
        f"tests:\n{tests}"
    )


@pytest.mark.parametrize("jobs", [1, 8])
def test_embeddings_in_flight_honour_dash_j(tmp_path: Path, loopback: LoopbackServer, jobs: int) -> None:
    # 7 outputs and the reference: 8 texts, 8 requests. The embedding gate was a fixed 4 before.
    counter = InFlight(expected=jobs, total=8)
    loopback.route("POST", "/v1/embeddings", _embeddings(counter))
    _run(tmp_path, _similar_config(loopback, rows=7), "-j", str(jobs))
    assert (counter.arrived, counter.peak) == (8, jobs)


_BOTH = """\
import json
import urllib.request

def _post(url, payload):
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())

def call_api(prompt, options, context):
    return _post("URL/complete", {"prompt": prompt})["output"]

def call_embedding_api(text):
    return _post("URL/embed", {"text": text})["embedding"]
"""


def test_completions_and_embeddings_of_one_provider_share_its_gate(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    counter = InFlight(expected=2, total=8)

    def complete(request: Request) -> Reply:
        counter.hold()
        return Reply.json({"output": request.json["prompt"]})

    def embed(request: Request) -> Reply:
        counter.hold()
        return Reply.json({"embedding": [1.0, float(len(request.json["text"]))]})

    loopback.route("POST", "/complete", complete)
    loopback.route("POST", "/embed", embed)
    (tmp_path / "both.py").write_text(textwrap.dedent(_BOTH).replace("URL", loopback.url), encoding="utf-8")
    spec = ProviderSpec(id="python:both.py", base_dir=str(tmp_path), path="providers[0]")
    services = RunServices(ProviderPool(str(tmp_path), max_concurrency=2), Cache.open(False))

    async def both() -> None:
        completions = [services.complete(spec, f"prompt {i}") for i in range(4)]
        # one text per call: each is its own batch, so four embedding calls compete for the gate
        embeddings = [services.embed(spec, [f"text {i}"]) for i in range(4)]
        await asyncio.gather(*completions, *embeddings)
        await services.pool.aclose()

    asyncio.run(both())
    assert (counter.arrived, counter.peak) == (8, 2)


def test_the_local_model_takes_one_call_at_a_time_unless_configured() -> None:
    pool = ProviderPool(max_concurrency=8)
    assert pool.gate_size(ProviderSpec(id="local")) == 1
    assert pool.gate_size(ProviderSpec(id="local", config={"maxConcurrency": 3})) == 3
    assert pool.gate_size(ProviderSpec(id="fake")) == 8


def test_one_gate_per_provider_identity() -> None:
    pool = ProviderPool(max_concurrency=3)

    async def gates() -> tuple[bool, bool]:
        first = pool.gate(ProviderSpec(id="fake", label="a", path="providers[0]"))
        same = pool.gate(ProviderSpec(id="fake", label="b", path="tests[0].options.provider"))
        other = pool.gate(ProviderSpec(id="fake", config={"batchSize": 2}))
        return first is same, first is other

    assert asyncio.run(gates()) == (True, False)


def test_a_providers_protocols_are_checked_once_per_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # a runtime-checkable Protocol's isinstance is slow on Python 3.11: the pool asks once per provider
    checked: list[object] = []
    real_of = services._Traits.of

    def counting_of(provider: Any) -> services._Traits:
        checked.append(provider)
        return real_of(provider)

    monkeypatch.setattr(services._Traits, "of", staticmethod(counting_of))
    run = RunServices(ProviderPool(max_concurrency=2), Cache.open(False))

    async def calls() -> list[str | None]:
        outputs = []
        for label in ("a", "b", "c"):  # equal specs, distinct objects: one identity
            response = await run.complete(ProviderSpec(id="echo", label=label), f"hello {label}")
            outputs.append(response.output)
        return outputs

    assert asyncio.run(calls()) == ["hello a", "hello b", "hello c"]
    assert len(checked) == 1
