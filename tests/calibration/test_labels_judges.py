"""``evalh calibrate --labels REF`` for a pass/fail judge: a real loopback judge answers per a script, a
person's ratings in the run store are the labels, and accuracy, the confusion matrix and Cohen's kappa are
the ones counted here by hand from those two lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.store.runs import open_store
from tests.assertions.judge_helpers import OPENAI_PATH, openai_text
from tests.loopback import LoopbackServer, Reply, Request

# answer -> (the judge's verdict, the person's rating); no answer holds another
CASES: dict[str, tuple[bool, bool]] = {
    "reply-alpha": (True, True),
    "reply-bravo": (True, True),
    "reply-charlie": (True, False),
    "reply-delta": (False, True),
    "reply-echo": (True, True),
    "reply-foxtrot": (False, False),
    "reply-golf": (False, False),
    "reply-hotel": (True, False),
    "reply-india": (False, False),
    "reply-juliet": (True, True),
}


def scripted(request: Request) -> Reply:
    text = json.dumps(request.json["messages"])
    passed = next((verdict for answer, (verdict, _) in CASES.items() if answer in text), True)
    return openai_text(json.dumps({"pass": passed, "score": float(passed), "reason": "scripted"}))


def _hand_kappa(verdicts: list[bool], labels: list[bool]) -> float:
    """(p_o - p_e) / (1 - p_e): observed agreement against the agreement the two marginals expect."""
    n = len(labels)
    observed = sum(v == y for v, y in zip(verdicts, labels, strict=True)) / n
    judge_pass, label_pass = sum(verdicts) / n, sum(labels) / n
    expected = judge_pass * label_pass + (1 - judge_pass) * (1 - label_pass)
    return (observed - expected) / (1 - expected)


def test_a_judge_against_the_ratings(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", OPENAI_PATH, scripted)
    grader = {"id": "openai:chat:judge", "config": {"apiBaseUrl": loopback.url + "/v1", "apiKey": "sk-x"}}
    config: dict[str, Any] = {
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {"assert": [{"type": "llm-rubric", "value": "is right", "provider": grader}]},
        "tests": [{"vars": {"answer": answer}} for answer in [*CASES, "reply-kilo"]],
    }
    path = tmp_path / "judged.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert CliRunner().invoke(app, ["run", str(path), "--no-table"]).exit_code in (0, 1)
    with open_store() as store:
        ids = {row["vars"]["answer"]: row["id"] for row in store.iter_rows("latest")}
    extra = "reply-kilo"  # rated, then the rating cleared: no label, as if never rated
    for answer, (_, rated_pass) in [*CASES.items(), (extra, (True, True))]:
        verdict = "--pass" if rated_pass else "--fail"
        rated = CliRunner().invoke(app, ["runs", "rate", "latest", ids[answer], verdict, "--comment", "why"])
        assert rated.exit_code == 0, rated.output
    assert CliRunner().invoke(app, ["runs", "rate", "latest", ids[extra], "--clear"]).exit_code == 0
    report = tmp_path / "c.json"
    result = CliRunner().invoke(
        app, ["calibrate", str(path), "--labels", "latest", "-o", str(report), "--bootstrap", "200"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text(encoding="utf-8"))
    (judge,) = document["judges"]
    verdicts = [v for v, _ in CASES.values()]
    labels = [y for _, y in CASES.values()]
    assert judge["items"] == len(CASES) and document["labels"]["unlabelled"] == 1
    matrix = judge["confusion"]
    pairs = list(zip(verdicts, labels, strict=True))
    assert (matrix["truePass"], matrix["falsePass"], matrix["trueFail"], matrix["falseFail"]) == (
        pairs.count((True, True)),
        pairs.count((True, False)),
        pairs.count((False, False)),
        pairs.count((False, True)),
    )
    assert judge["accuracy"] == pytest.approx(7 / 10)
    assert judge["cohenKappa"] == pytest.approx(_hand_kappa(verdicts, labels))
    low, high = judge["cohenKappaInterval95"]
    assert low <= judge["cohenKappa"] <= high
