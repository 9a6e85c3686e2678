"""Issue 25's motivating case through the CLI: an app that answers right 70% of the time, run twice with
--repeat 20, passes a --fail-on regressions gate; four tests dropping from 95% to 10% fail it, named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.helpers import evalh, report

# a seeded app: each answer is a draw of an RNG seeded by (run label, test, repeat); the repeat is counted
# per run label and test, so every run's draws are fixed whatever order the calls come in
APP = """
import fcntl, json, os, random

HERE = os.path.dirname(os.path.abspath(__file__))


def call_api(prompt, options, context):
    with open(os.path.join(HERE, "app.json"), encoding="utf-8") as handle:
        state = json.load(handle)
    test = context["vars"]["q"]
    with open(os.path.join(HERE, "draws.lock"), "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = os.path.join(HERE, "draws.json")
        counts = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}
        key = state["label"] + "/" + test
        repeat = counts.get(key, 0)
        counts[key] = repeat + 1
        with open(path, "w", encoding="utf-8") as out:
            json.dump(counts, out)
    draw = random.Random(f"{state['label']}/{test}/{repeat}").random()
    return "yes" if draw < state["rates"].get(test, 0.7) else "no"
"""

TESTS = [f"t{i}" for i in range(1, 9)]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    config = {
        "description": "a flaky app",
        "prompts": ["{{ q }}"],
        "providers": ["python:app.py"],
        "defaultTest": {"assert": [{"type": "icontains", "value": "yes"}]},
        "tests": [{"description": name, "vars": {"q": name}} for name in TESTS],
    }
    path = tmp_path / "evalh.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _run(config: Path, label: str, rates: dict[str, float], *args: str) -> tuple[int, str]:
    (config.parent / "app.json").write_text(json.dumps({"label": label, "rates": rates}), encoding="utf-8")
    out = config.parent / f"{label}.json"
    result = evalh(
        "run", config, "--repeat", "20", "--no-write", "--no-table", "--no-progress-bar", "-o", out, *args
    )
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def _flipped(before: Path, after: Path) -> int:
    """Rows that passed in ``before`` and fail in ``after`` (matched by test and repeat)."""

    def passed(path: Path) -> dict[tuple[str, int], bool]:
        rows = report(path)["results"]["results"]
        return {(row["testCase"]["description"], row["repeatIdx"]): row["success"] for row in rows}

    old, new = passed(before), passed(after)
    return sum(old[key] and not new[key] for key in old)


def test_an_unchanged_flaky_app_passes_the_regressions_gate(app: Path) -> None:
    code, _ = _run(app, "first", {})
    assert code == 1  # the rows of a 70% app fail, as today
    code, output = _run(
        app, "second", {}, "--baseline", app.parent / "first.json", "--fail-on", "regressions"
    )
    assert code == 0, output
    assert _flipped(app.parent / "first.json", app.parent / "second.json") > 0  # rows a row gate counts
    assert "No significant regression since the baseline." in output
    assert "with 20 repeats, drops under about" in output


def test_four_tests_dropping_from_95_to_10_percent_fail_the_gate_and_are_named(app: Path) -> None:
    strong = {name: 0.95 for name in TESTS[:4]}
    _run(app, "before", strong)
    dropped = {name: 0.10 for name in TESTS[:4]}
    baseline = app.parent / "before.json"
    code, output = _run(app, "after", dropped, "--baseline", baseline, "--fail-on", "regressions")
    assert code == 1, output
    assert "4 significant regression(s) since the baseline: t1, t2, t3, t4." in output
    result = evalh("diff", baseline, app.parent / "after.json", "--json")
    assert result.exit_code == 1
    statistics = json.loads(result.output)["statistics"]
    regressed = [test["test"] for test in statistics["tests"] if test["verdict"] == "regressed"]
    assert regressed == TESTS[:4] and statistics["regressedCount"] == 4
    assert json.loads(result.output)["newFailureCount"] == 4


def test_alpha_is_a_flag_of_diff_within_bounds(app: Path) -> None:
    _run(app, "one", {})
    result = evalh("diff", app.parent / "one.json", app.parent / "one.json", "--alpha", "2")
    assert result.exit_code == 2 and "--alpha" in result.output
    result = evalh("diff", app.parent / "one.json", app.parent / "one.json", "--alpha", "0.01", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["statistics"]["alpha"] == 0.01


def test_the_markdown_summary_lists_the_tests_that_regressed_not_the_rows_that_flipped(app: Path) -> None:
    strong = {name: 0.95 for name in TESTS[:4]}
    _run(app, "before", strong)
    dropped = {name: 0.10 for name in TESTS[:4]}
    summary = app.parent / "summary.md"
    baseline = app.parent / "before.json"
    code, output = _run(app, "after", dropped, "--baseline", baseline, "-o", summary)
    assert code == 1, output
    text = summary.read_text(encoding="utf-8")
    assert "Regressed beyond chance (4; alpha 0.05)" in text
    assert "Regressions: passed in the baseline, fail now" not in text  # rows of unchanged tests flip too
    assert "with 20 repeats, drops under about" in text
    for name in TESTS[:4]:
        assert f"| {name} |" in text
