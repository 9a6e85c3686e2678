"""``evalh calibrate`` for pass/fail judges, with a real loopback judge answering per a script: accuracy, the
confusion matrix and Cohen's kappa (checked against scikit-learn) with its interval, and several judges'
agreement with each other (Fleiss' kappa, checked against statsmodels)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.assertions.judge_helpers import OPENAI_PATH, openai_text
from tests.loopback import LoopbackServer, Reply, Request

# output -> (label, judge-a's verdict, judge-b's, judge-c's)
CASES: dict[str, tuple[str, bool, bool, bool]] = {
    "answer 1": ("pass", True, True, True),
    "answer 2": ("pass", True, False, True),
    "answer 3": ("pass", True, True, False),
    "answer 4": ("pass", False, False, True),
    "answer 5": ("pass", True, True, True),
    "answer 6": ("fail", False, False, False),
    "answer 7": ("fail", True, True, False),
    "answer 8": ("fail", False, True, False),
    "answer 9": ("fail", False, False, True),
}
JUDGES = ("judge-a", "judge-b", "judge-c")


def scripted(request: Request) -> Reply:
    body = request.json
    text = json.dumps(body["messages"])
    (output,) = [o for o in CASES if o in text]  # "answer 1" .. "answer 9": none holds another
    passed = CASES[output][1 + JUDGES.index(body["model"])]
    return openai_text(json.dumps({"pass": passed, "score": float(passed), "reason": "scripted"}))


def grader(server: LoopbackServer, model: str) -> dict[str, Any]:
    return {"id": f"openai:chat:{model}", "config": {"apiBaseUrl": server.url + "/v1", "apiKey": "sk-x"}}


def calibrate(server: LoopbackServer, tmp_path: Path, provider: Any) -> dict[str, Any]:
    server.route("POST", OPENAI_PATH, scripted)
    config = {
        "defaultTest": {"assert": [{"type": "llm-rubric", "value": "is right", "provider": provider}]},
        "tests": [{"output": o, "metadata": {"label": c[0]}} for o, c in CASES.items()],
    }
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    report = tmp_path / "c.json"
    result = CliRunner().invoke(app, ["calibrate", str(path), "-o", str(report), "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    assert "Judges against the labels" in result.output
    return {"report": json.loads(report.read_text(encoding="utf-8")), "output": result.output}


def test_one_judge_against_the_labels(loopback: LoopbackServer, tmp_path: Path) -> None:
    got = calibrate(loopback, tmp_path, grader(loopback, "judge-a"))
    (judge,) = got["report"]["judges"]
    labels = [c[0] == "pass" for c in CASES.values()]
    verdicts = [c[1] for c in CASES.values()]
    assert judge["judge"] == "openai:chat:judge-a" and judge["items"] == 9
    assert judge["cohenKappa"] == pytest.approx(cohen_kappa_score(verdicts, labels))
    low, high = judge["cohenKappaInterval95"]
    assert low <= judge["cohenKappa"] <= high
    matrix = judge["confusion"]
    assert (matrix["truePass"], matrix["falsePass"], matrix["trueFail"], matrix["falseFail"]) == (4, 1, 3, 1)
    assert judge["accuracy"] == pytest.approx(7 / 9)


def test_several_judges_and_their_agreement(loopback: LoopbackServer, tmp_path: Path) -> None:
    got = calibrate(loopback, tmp_path, [grader(loopback, m) for m in JUDGES])
    by_judge = {j["judge"]: j for j in got["report"]["judges"]}
    labels = [c[0] == "pass" for c in CASES.values()]
    for index, model in enumerate(JUDGES):
        verdicts = [c[1 + index] for c in CASES.values()]
        assert by_judge[f"openai:chat:{model}"]["cohenKappa"] == pytest.approx(
            cohen_kappa_score(verdicts, labels)
        )
    (panel,) = got["report"]["judgePanels"]
    table, _ = aggregate_raters([list(c[1:]) for c in CASES.values()])
    assert panel["items"] == 9 and panel["fleissKappa"] == pytest.approx(fleiss_kappa(table))
    assert "Fleiss' kappa" in got["output"]
