"""Repeats as evidence, through the real command line: a test's figures over ``--repeat N`` (checked
against scipy), the verdict over repeats (``--repeat-pass-rate``, ``evaluateOptions.repeatPassRate``,
``evaluate(repeat_pass_rate=...)``) and its exit codes, and every place the figures are shown (JSON,
JUnit, ``-o summary.md``, the console, ``evalh runs show``).

The app under test is a real ``exec:`` program that answers its k-th call for a test with the k-th
character of that test's ``pattern`` var (a counter per test, under a file lock), so each test's passes
are known and the figures are deterministic whatever the concurrency."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scipy import stats

from evalh.api import evaluate
from evalh.errors import ConfigError
from evalh.stats.repeats import suite_pass_rate_interval
from tests.cli.test_cli import evalh, write

ROOT = Path(__file__).resolve().parents[2]
APP = """
import fcntl, json, sys
from pathlib import Path

counters = Path(sys.argv[1])
test = json.loads(sys.argv[-1])["vars"]
with open(counters / "lock", "a+") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    path = counters / (test["name"] + ".count")
    k = int(path.read_text()) if path.exists() else 0
    path.write_text(str(k + 1))
print(test["pattern"][k])
"""
# test -> its answers over 10 repeats ("1" passes): 10/10, 8/10 and 6/10 passes
PATTERNS = {"always": "1111111111", "mostly": "1101101111", "coin": "1010101011"}
REPEATS = 10


def _config(tmp_path: Path, evaluate_options: str = "") -> Path:
    """A config of the three tests whose counters start at 0 (a new directory per config)."""
    runs = len(list(tmp_path.glob("counters-*")))
    counters = tmp_path / f"counters-{runs}"
    counters.mkdir()
    app = tmp_path / "app.py"
    app.write_text(APP, encoding="utf-8")
    tests = "".join(
        f"  - description: {name}\n    vars: {{name: {name}, pattern: '{pattern}'}}\n"
        "    assert: [{type: equals, value: '1'}]\n"
        for name, pattern in PATTERNS.items()
    )
    provider = f"exec:{sys.executable} {app} {counters}"
    return write(
        tmp_path / f"config-{runs}.yaml",
        f'prompts: ["{{{{name}}}}"]\nproviders: ["{provider}"]\n{evaluate_options}tests:\n{tests}',
    )


def _wilson(passes: int, runs: int) -> tuple[float, float]:
    ci = stats.binomtest(passes, runs).proportion_ci(confidence_level=0.95, method="wilson")
    return (ci.low, ci.high)


def _t_interval(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=stats.sem(values))
    return (float(low), float(high))


def _percent(interval: tuple[float, float]) -> str:
    return f"[{100 * interval[0]:.0f}-{100 * interval[1]:.0f}%]"


def _report(path: Path) -> dict[str, Any]:
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["results"]
    return results


def test_each_test_over_its_repeats_matches_scipy_in_every_report(tmp_path: Path) -> None:
    report, junit, summary = tmp_path / "r.json", tmp_path / "r.xml", tmp_path / "s.md"
    result = evalh(
        "run", str(_config(tmp_path)), "--repeat", str(REPEATS), "--no-table", "-o", str(report), str(junit),
        str(summary),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # two tests missed some repeats: 1.0 needs them all
    document = _report(report)
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(report.read_text(encoding="utf-8")), schema)
    repeats = document["evalh"]["repeats"]
    assert (repeats["count"], repeats["requiredPassRate"], repeats["testsPassed"]) == (REPEATS, 1.0, 1)
    for index, (test, pattern) in enumerate(zip(repeats["tests"], PATTERNS.values(), strict=True)):
        passes = pattern.count("1")
        scores = [float(answer) for answer in pattern]
        assert (test["testIdx"], test["promptIdx"], test["providerIdx"]) == (index, 0, 0)
        assert (test["runs"], test["passes"], test["passRate"]) == (REPEATS, passes, passes / REPEATS)
        assert test["passRateInterval"] == pytest.approx(_wilson(passes, REPEATS), abs=1e-9)
        assert test["passAll"] is (passes == REPEATS) and test["passAny"] is (passes > 0)
        assert test["flaky"] is (0 < passes < REPEATS)
        assert test["meanScore"] == pytest.approx(passes / REPEATS)
        expected = (1.0, 1.0) if passes == REPEATS else _t_interval(scores)  # no spread: a point
        assert test["meanScoreInterval"] == pytest.approx(expected, abs=1e-9)
        assert test["pass"] is (passes == REPEATS)
    # tests as the unit: the suite interval of evalh.stats (tested against scipy in tests/stats) over each
    # test's (passes, runs), not over the 30 rows as if they were independent
    counts = [(pattern.count("1"), REPEATS) for pattern in PATTERNS.values()]
    assert document["stats"]["passRateInterval"] == pytest.approx(suite_pass_rate_interval(counts), abs=1e-12)
    rows_as_units = _wilson(sum(passes for passes, _ in counts), REPEATS * len(counts))
    assert document["stats"]["passRateInterval"][0] < rows_as_units[0] - 0.05  # wider than the rows' Wilson
    assert document["stats"]["successes"] == 24  # the rows keep their per-draw verdict

    mostly = _percent(_wilson(8, REPEATS))
    console = result.stdout
    assert f"8/10 80% {mostly}" in console and "flaky" in console
    assert f"80.00% {_percent(tuple(document['stats']['passRateInterval']))}" in console
    assert "1/3 tests passed every one of 10 repeats (2 flaky)" in console

    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    suite_properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    low, high = document["stats"]["passRateInterval"]
    assert suite_properties["passRateInterval"] == f"{low:.4f},{high:.4f}"
    assert suite_properties["repeatPassRate"] == "1"
    cases = [case for case in suite.findall("testcase") if case.get("name", "").startswith("test 2")]
    assert len(cases) == REPEATS
    for case in cases:
        properties = {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        wilson = _wilson(8, REPEATS)
        assert properties == {
            "passRate": "0.8000",
            "passRateInterval": f"{wilson[0]:.4f},{wilson[1]:.4f}",
            "flaky": "true",
            "repeatVerdict": "fail",
        }

    markdown = summary.read_text(encoding="utf-8")
    escaped = mostly.replace("[", "\\[").replace("-", "\\-").replace("]", "\\]")
    assert "### 1/3 tests passed every one of 10 repeats \\(2 flaky\\)" in markdown
    assert f"| mostly | 8/10 | 80% {escaped} | flaky | ❌ |" in markdown
    assert markdown.startswith("## ❌ ")

    shown = evalh("runs", "show", "latest")  # the run store keeps what the summary needs
    assert shown.returncode == 0, shown.stderr
    assert f"8/10 80% {mostly}" in shown.stdout
    assert "1/3 tests passed every one of 10 repeats (2 flaky)" in shown.stdout


def test_the_required_pass_rate_decides_the_exit_code_and_fail_under_counts_tests(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    args = ("--repeat", str(REPEATS), "--no-table", "-o", str(report))
    strict = evalh("run", str(_config(tmp_path)), *args)
    assert strict.returncode == 1, strict.stderr
    lenient = evalh("run", str(_config(tmp_path)), *args, "--repeat-pass-rate", "0.6")
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr  # 6/10 reaches 0.6
    repeats = _report(report)["evalh"]["repeats"]
    assert (repeats["requiredPassRate"], repeats["testsPassed"]) == (0.6, 3)
    assert [test["pass"] for test in repeats["tests"]] == [True, True, True]
    assert "3/3 tests passed at least 60% of 10 repeats (2 flaky)" in lenient.stdout
    # at 0.8, 2 of the 3 tests pass: 66.7% of the tests (the rows' 80% no longer decides)
    two_of_three = ("--repeat-pass-rate", "0.8", "--fail-under")
    assert evalh("run", str(_config(tmp_path)), *args, *two_of_three, "60").returncode == 0
    assert evalh("run", str(_config(tmp_path)), *args, *two_of_three, "70").returncode == 1


def test_evaluate_options_sets_the_required_rate_and_the_flag_wins(tmp_path: Path) -> None:
    config = _config(tmp_path, f"evaluateOptions: {{repeat: {REPEATS}, repeatPassRate: 0.6}}\n")
    assert evalh("run", str(config), "--no-table").returncode == 0
    again = _config(tmp_path, f"evaluateOptions: {{repeat: {REPEATS}, repeatPassRate: 0.6}}\n")
    assert evalh("run", str(again), "--no-table", "--repeat-pass-rate", "1").returncode == 1


@pytest.mark.parametrize(
    ("options", "flag", "said"),
    [
        ("evaluateOptions: {repeatPassRate: 1.5}\n", (), "evaluateOptions.repeatPassRate: must be <= 1"),
        ("evaluateOptions: {repeatPassRate: high}\n", (), "evaluateOptions.repeatPassRate: must be a number"),
        ("", ("--repeat-pass-rate", "1.5"), "'--repeat-pass-rate': Input should be less than or equal to 1"),
        ("", ("--repeat-pass-rate", "-0.1"), "'--repeat-pass-rate': Input should be greater than or equal"),
    ],
)
def test_a_required_rate_outside_0_to_1_is_a_usage_error(
    tmp_path: Path, options: str, flag: tuple[str, ...], said: str
) -> None:
    result = evalh("run", str(_config(tmp_path, options)), "--no-table", *flag)
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.glob("counters-*/*.count"))  # refused before any call


def test_without_repeats_the_suite_interval_is_wilson_over_the_tests(tmp_path: Path) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    result = evalh("run", str(_config(tmp_path)), "--no-table", "-o", str(report), str(junit))
    assert result.returncode == 0, result.stderr  # every pattern starts with a pass
    document = _report(report)
    assert "repeats" not in document["evalh"]
    assert document["stats"]["passRateInterval"] == pytest.approx(_wilson(3, 3), abs=1e-9)
    assert "Tests over repeats" not in result.stdout and "Repeats" not in result.stdout
    assert b"<properties>\n        <property" not in junit.read_bytes()  # no testcase properties


def test_the_python_api_gives_each_test_over_its_repeats(tmp_path: Path) -> None:
    result = evaluate(str(_config(tmp_path)), repeat=REPEATS, repeat_pass_rate=0.6)
    assert result.ok
    repeats = result.repeats
    assert repeats is not None and repeats.required_pass_rate == 0.6 and repeats.count == REPEATS
    assert [(test.passes, test.flaky, test.passed) for test in repeats.tests] == [
        (10, False, True),
        (8, True, True),
        (6, True, True),
    ]
    assert repeats.tests[1].pass_rate_interval == pytest.approx(_wilson(8, REPEATS), abs=1e-9)
    assert result.to_dict()["results"]["evalh"]["repeats"]["testsPassed"] == 3
    assert not evaluate(str(_config(tmp_path)), repeat=REPEATS).ok  # 1.0: every repeat must pass
    with pytest.raises(ConfigError, match=r"repeat_pass_rate must be a number from 0 to 1"):
        evaluate(str(_config(tmp_path)), repeat=REPEATS, repeat_pass_rate=1.5)


def test_merged_shards_keep_the_required_rate_they_ran_with(tmp_path: Path) -> None:
    shards, config = [], _config(tmp_path)  # one config: each test runs in one shard, its counter too
    for index in (1, 2):
        shard = tmp_path / f"shard-{index}.json"
        ran = evalh(
            "run", str(config), "--repeat", str(REPEATS), "--repeat-pass-rate", "0.6",
            "--shard", f"{index}/2", "--no-table", "-o", str(shard),
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        shards.append(str(shard))
    merged = tmp_path / "merged.json"
    result = evalh("merge", *shards, "-o", str(merged), "--no-table")
    assert result.returncode == 0, result.stdout + result.stderr  # 6/10 reaches 0.6, as in each shard
    repeats = _report(merged)["evalh"]["repeats"]
    assert (repeats["requiredPassRate"], repeats["testsPassed"], len(repeats["tests"])) == (0.6, 3, 3)
