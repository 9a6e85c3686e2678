"""A grader's calls fill the whole concurrency the run allows: nothing between the runner and the server
(the provider's gate, the HTTP client's connection pools) caps them lower, and nothing lets more through.

As in test_gates.py, the loopback server holds each call until as many are in flight as should be (or
all have arrived), and the assertions compare its counters, never durations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer, Reply, Request
from tests.runner.test_gates import InFlight, _run


def _grader(counter: InFlight) -> Callable[[Request], Reply]:
    def answer(request: Request) -> Reply:
        counter.hold()
        verdict = json.dumps({"pass": True, "score": 1, "reason": "ok"})
        message = {"role": "assistant", "content": verdict}
        return Reply.json({"choices": [{"index": 0, "message": message}], "usage": {"total_tokens": 1}})

    return answer


def _rubric_config(loopback: LoopbackServer, rows: int, **grader_config: int) -> str:
    """Recorded outputs graded by a loopback judge: the only requests are grading calls (JSON is YAML)."""
    grader = {"apiBaseUrl": f"{loopback.url}/v1", "apiKey": "sk-test", **grader_config}
    return json.dumps(
        {
            "defaultTest": {
                "options": {"provider": {"id": "openai:chat:judge", "config": grader}},
                "assert": [{"type": "llm-rubric", "value": "says something"}],
            },
            "tests": [{"output": f"answer number {i}"} for i in range(rows)],
        }
    )


@pytest.mark.parametrize("jobs", [16, 64])
def test_grader_calls_in_flight_reach_dash_j(tmp_path: Path, loopback: LoopbackServer, jobs: int) -> None:
    # Twice as many tests as slots: the second half must wait for the first to finish.
    counter = InFlight(expected=jobs, total=2 * jobs)
    loopback.route("POST", "/v1/chat/completions", _grader(counter))
    _run(tmp_path, _rubric_config(loopback, rows=2 * jobs), "-j", str(jobs))
    assert (counter.arrived, counter.peak) == (2 * jobs, jobs)


def test_a_graders_max_concurrency_caps_its_calls(tmp_path: Path, loopback: LoopbackServer) -> None:
    counter = InFlight(expected=24, total=48)
    loopback.route("POST", "/v1/chat/completions", _grader(counter))
    _run(tmp_path, _rubric_config(loopback, rows=48, maxConcurrency=24), "-j", "64")
    assert (counter.arrived, counter.peak) == (48, 24)
