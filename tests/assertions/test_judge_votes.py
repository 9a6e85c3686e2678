"""Judges asked more than once, for real: a loopback OpenAI-compatible judge answers per a script keyed by
the request's model and seed, so samples (distinct calls and cache entries), their majority, several graders
with their aggregate, and the judge identity recorded in the JSON report are checked end to end."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.reports.writers import write_reports
from evalh.runner.execute import run_suite
from tests.assertions.judge_helpers import OPENAI_PATH, openai_text
from tests.loopback import LoopbackServer, Reply, Request

APP_PATH = "/app/v1/chat/completions"
# model -> seed -> pass: judge-a passes seeds 42 and 44, fails 43; judge-b always fails; judge-c passes
SCRIPT: Mapping[str, Mapping[int, bool]] = {
    "judge-a": {42: True, 43: False, 44: True, 45: False, 46: False},
    "judge-b": {42: False},
    "judge-c": {42: True},
}


def scripted_judge(request: Request) -> Reply:
    body = request.json
    passed = SCRIPT[body["model"]][body.get("seed", 42)]
    reply = {
        "pass": passed,
        "score": 1.0 if passed else 0.0,
        "reason": f"{body['model']} seed {body['seed']}",
    }
    return openai_text(json.dumps(reply))


def grader(server: LoopbackServer, model: str) -> dict[str, Any]:
    return {"id": f"openai:chat:{model}", "config": {"apiBaseUrl": server.url + "/v1", "apiKey": "sk-x"}}


def run_config(
    server: LoopbackServer, tmp_path: Path, assertion: Mapping[str, Any], options: Mapping[str, Any] = {}
) -> dict[str, Any]:
    server.route("POST", APP_PATH, lambda r: openai_text("Hello, Ada!"))
    server.route("POST", OPENAI_PATH, scripted_judge)
    config = {
        "prompts": ["Say hello to {{name}}"],
        "providers": [
            {"id": "openai:chat:app", "config": {"apiBaseUrl": server.url + "/app/v1", "apiKey": "k"}}
        ],
        "defaultTest": {"options": {"provider": grader(server, "judge-a"), **options}},
        "tests": [
            {"vars": {"name": "Ada"}, "assert": [{"type": "llm-rubric", "value": "greets Ada", **assertion}]}
        ],
    }
    path = tmp_path / "evalh.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = run_suite(load_suite(path))
    (report,) = write_reports(result, [str(tmp_path / "out.json")])
    row = json.loads(report.read_text(encoding="utf-8"))["results"]["results"][0]
    component = row["gradingResult"]["componentResults"][0]
    return {"row": row, "component": component, "metadata": component["metadata"]}


def judge_seeds(server: LoopbackServer) -> list[tuple[str, int]]:
    return sorted((r.json["model"], r.json["seed"]) for r in server.requests_to(OPENAI_PATH))


def test_three_samples_are_three_calls_and_the_majority_decides(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    got = run_config(loopback, tmp_path, {"samples": 3})
    assert judge_seeds(loopback) == [("judge-a", 42), ("judge-a", 43), ("judge-a", 44)]
    metadata = got["metadata"]
    assert [s["pass"] for s in metadata["samples"]] == [True, False, True]
    assert metadata["sample_agreement"] == pytest.approx(2 / 3)
    assert got["component"]["pass"] is True and got["row"]["success"] is True
    assert got["component"]["score"] == pytest.approx(2 / 3)


def test_a_majority_of_failing_samples_fails(loopback: LoopbackServer, tmp_path: Path) -> None:
    got = run_config(loopback, tmp_path, {}, {"judge": {"samples": 5}})  # suite-wide default
    assert len(judge_seeds(loopback)) == 5
    assert [s["pass"] for s in got["metadata"]["samples"]] == [True, False, True, False, False]
    assert got["row"]["success"] is False


def test_the_cache_keeps_each_sample_apart(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_CACHE", "true")
    first = run_config(loopback, tmp_path, {"samples": 3})
    calls = len(loopback.requests_to(OPENAI_PATH))
    second = run_config(loopback, tmp_path, {"samples": 3})
    assert len(loopback.requests_to(OPENAI_PATH)) == calls == 3  # the re-run asked nobody
    assert second["metadata"]["samples"] == first["metadata"]["samples"]
    assert [s["pass"] for s in second["metadata"]["samples"]] == [True, False, True]


@pytest.mark.parametrize(("aggregate", "passed"), [("majority", True), ("min", False), ("mean", True)])
def test_several_graders_combine_by_aggregate(
    loopback: LoopbackServer, tmp_path: Path, aggregate: str, passed: bool
) -> None:
    graders = [grader(loopback, m) for m in ("judge-a", "judge-b", "judge-c")]
    got = run_config(loopback, tmp_path, {"provider": graders, "aggregate": aggregate, "threshold": 0.5})
    assert judge_seeds(loopback) == [("judge-a", 42), ("judge-b", 42), ("judge-c", 42)]
    judges = got["metadata"]["judges"]
    assert [(j["model"], j["pass"]) for j in judges] == [
        ("judge-a", True),
        ("judge-b", False),
        ("judge-c", True),
    ]
    assert got["row"]["success"] is passed


def test_the_judge_identity_is_recorded(loopback: LoopbackServer, tmp_path: Path) -> None:
    from evalh.assertions.judge_prompts import LLM_RUBRIC_PROMPT

    got = run_config(loopback, tmp_path, {})
    identity = got["metadata"]["judge"]
    expected = hashlib.sha256(json.dumps([LLM_RUBRIC_PROMPT], sort_keys=True).encode()).hexdigest()
    assert identity == {"provider": "openai:chat:judge-a", "model": "judge-a", "prompt_sha256": expected}
    custom = run_config(loopback, tmp_path, {"rubricPrompt": "Grade {{output}}: {{rubric}}"})
    assert custom["metadata"]["judge"]["prompt_sha256"] != expected


@pytest.mark.parametrize(
    ("assertion", "words", "where"),
    [
        ({"type": "contains", "value": "x", "samples": 3}, "no grader model", "samples"),
        ({"aggregate": "min"}, "names one", "aggregate"),
        ({"samples": 0}, "samples", "samples"),
        ({"aggregate": "median", "provider": ["openai:chat:a", "openai:chat:b"]}, "aggregate", "aggregate"),
    ],
)
def test_bad_judge_options_are_located_errors(
    tmp_path: Path, assertion: Mapping[str, Any], words: str, where: str
) -> None:
    config = {
        "prompts": ["p"],
        "providers": ["echo"],
        "tests": [{"assert": [{"type": "llm-rubric", "value": "v", **assertion}]}],
    }
    path = tmp_path / "evalh.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    text = caught.value.render()
    assert words in text and f"tests[0].assert[0].{where}" in text and "evalh.yaml" in text
