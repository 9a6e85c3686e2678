"""Sharding and merging through the real thing (issue 13): three ``evalh run --shard k/3`` processes on a
suite with named and derived metrics, failures, errors, an assert-set and two providers, then ``evalh
merge``; the merged JSON and JUnit equal the unsharded run's, but for what times the run. And merge's
refusals: a whole run, another run's shard, a share given twice or missing, overlapping shards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.reports.test_json import SCHEMA_PATH

PROVIDER = """
def call_api(prompt, options, context):
    if "boom" in prompt:
        return {"error": "service down"}
    return {"output": prompt.upper()}
"""

SUITE = """
description: sharded suite
prompts: ["Say {{word}}", "Echo {{word}} now"]
providers: [echo, {id: "python:shout.py", label: shout}]
derivedMetrics:
  - {name: hit_rate, value: hits / __count}
defaultTest:
  assert:
    - {type: not-icontains, value: as an AI, metric: safety}
tests:
  - {description: apple, vars: {word: apple}, assert: [{type: icontains, value: apple, metric: hits}]}
  - {description: pear, vars: {word: pear}, assert: [{type: contains, value: pear, metric: hits, weight: 2}]}
  - {description: fig, vars: {word: fig}, metadata: {label: fig},
     assert: [{type: assert-set, threshold: 0.5,
               assert: [{type: icontains, value: fig}, {type: equals, value: x}]}]}
  - {description: kiwi, vars: {word: kiwi boom}, assert: [{type: icontains, value: kiwi, metric: hits}]}
  - {description: lime, vars: {word: lime}, assert: [{type: levenshtein, value: Say lime, threshold: 2}]}
  - {description: plum, vars: {word: plum}, assert: [{type: regex, value: "^Say"}]}
  - {vars: {word: apple}, assert: [{type: icontains, value: apple, metric: hits}]}
"""


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    (tmp_path / "shout.py").write_text(PROVIDER, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    return tmp_path


def evalh_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "evalh", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def evalh(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


RUN_FLAGS = ("--no-table", "--no-progress-bar", "--no-write", "--no-cache")


def comparable(path: Path) -> dict[str, Any]:
    """A JSON report without what measures the run itself: ids, times, durations, latencies."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("evalId", "metadata"):
        data.pop(key)
    results = data["results"]
    results.pop("timestamp")
    results["stats"].pop("durationMs")
    for row in results["results"]:
        for key in ("id", "latencyMs"):
            row.pop(key)
        row["response"].pop("latencyMs")
    for column in results["prompts"]:
        column["metrics"].pop("totalLatencyMs")
    for usage in results["evalh"]["providerUsage"]:
        usage.pop("latencyMs")
    return data  # type: ignore[no-any-return]


def junit(path: Path) -> str:
    root = ET.fromstring(path.read_bytes())
    for element in root.iter():
        for key in ("time", "timestamp"):
            element.attrib.pop(key, None)
    return ET.tostring(root, encoding="unicode")


def run_shards(directory: Path, total: int, *flags: str) -> list[Path]:
    paths = []
    for k in range(1, total + 1):
        out = directory / f"shard{k}.json"
        done = evalh_process(
            directory, "run", "suite.yaml", "--shard", f"{k}/{total}", "-o", out.name, *flags
        )
        assert done.returncode in (0, 1), done.stderr
        assert "Traceback" not in done.stderr
        paths.append(out)
    return paths


def test_three_shard_processes_merge_into_the_unsharded_run(suite_dir: Path) -> None:
    whole = evalh_process(suite_dir, "run", "suite.yaml", "-o", "whole.json", "whole.junit.xml", *RUN_FLAGS)
    assert whole.returncode == 1, whole.stderr  # failures and an error
    shards = run_shards(suite_dir, 3, *RUN_FLAGS)
    sizes = [len(json.loads(p.read_text(encoding="utf-8"))["results"]["results"]) for p in shards]
    assert sorted(sizes) == [8, 8, 12]  # 7 tests x 4 rows: 3 tests in one shard, 2 in the others
    merged, xml = suite_dir / "merged.json", suite_dir / "merged.junit.xml"
    code, output = evalh(
        "merge", *map(str, reversed(shards)), "-o", str(merged), "-o", str(xml), "--no-table"
    )
    assert code == 1, output  # as the unsharded run: a row failed
    assert "merged 3 shards" in output
    expected, got = comparable(suite_dir / "whole.json"), comparable(merged)
    assert got["results"]["results"] == expected["results"]["results"]  # rows, in the unsharded order
    for key in ("stats", "prompts", "aggregates", "evalh"):  # named metrics, derived metrics...
        assert got["results"][key] == expected["results"][key], key
    assert got == expected
    statuses = [row["failureReason"] for row in got["results"]["results"]]
    assert {0, 1, 2} <= set(statuses)  # the suite has passes, failures and errors
    assert got["results"]["aggregates"]["derivedMetrics"] and got["results"]["aggregates"]["classification"]
    assert "shard" not in got["results"]["evalh"]  # the merged run is a whole run
    jsonschema.validate(json.loads(merged.read_text(encoding="utf-8")), json.loads(SCHEMA_PATH.read_text()))
    assert junit(xml) == junit(suite_dir / "whole.junit.xml")


def test_merge_with_repeat_and_a_filter_equals_the_unsharded_run(suite_dir: Path) -> None:
    flags = (
        "--repeat",
        "2",
        "--filter-pattern",
        "apple|pear|lime|plum",
        "--filter-providers",
        "echo",
        "--filter-prompts",
        "^Say",
    )
    code, _ = evalh(
        "run", str(suite_dir / "suite.yaml"), "-o", str(suite_dir / "whole.json"), *RUN_FLAGS, *flags
    )
    paths = []
    for k in (1, 2):
        out = suite_dir / f"s{k}.json"
        evalh("run", str(suite_dir / "suite.yaml"), "--shard", f"{k}/2", "-o", str(out), *RUN_FLAGS, *flags)
        paths.append(out)
    merged = suite_dir / "merged.json"
    merge_code, output = evalh("merge", *map(str, paths), "-o", str(merged), "--no-table")
    assert merge_code == code == 0, output  # every row passed: merge exits 0 as the run did
    assert comparable(merged) == comparable(suite_dir / "whole.json")
    assert {row["repeatIdx"] for row in comparable(merged)["results"]["results"]} == {0, 1}


def shard_copy(source: Path, target: Path, change: Any) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    change(data)
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


def test_merge_refuses_what_is_not_all_the_shards_of_one_run(suite_dir: Path) -> None:
    config = str(suite_dir / "suite.yaml")
    one, two = suite_dir / "s1.json", suite_dir / "s2.json"
    for k, out in ((1, one), (2, two)):
        evalh("run", config, "--shard", f"{k}/2", "-o", str(out), *RUN_FLAGS)
    whole = suite_dir / "whole.json"
    evalh("run", config, "-o", str(whole), *RUN_FLAGS)
    code, output = evalh("merge", str(one), str(whole))
    assert code == 2 and f"{whole}: this report holds a whole run" in output
    code, output = evalh("merge", str(one))
    assert code == 2 and "shard 2/2 missing: given 1/2" in output
    code, output = evalh(
        "merge", str(one), str(two), str(shard_copy(one, suite_dir / "again.json", lambda d: d))
    )
    assert code == 2 and "shard 1/2 is given twice" in output and "again.json" in output
    other = suite_dir / "other.json"
    evalh("run", config, "--shard", "2/2", "--repeat", "2", "-o", str(other), *RUN_FLAGS)
    code, output = evalh("merge", str(one), str(other))
    assert code == 2 and f"{other}: is a shard of another run than {one}" in output
    three = suite_dir / "three.json"
    evalh("run", config, "--shard", "2/3", "-o", str(three), *RUN_FLAGS)
    code, output = evalh("merge", str(one), str(three))
    assert code == 2 and "is shard 2/3 while" in output

    def claim_share_two(data: dict[str, Any]) -> None:
        data["results"]["evalh"]["shard"]["index"] = 2

    fake = shard_copy(one, suite_dir / "fake.json", claim_share_two)
    code, output = evalh("merge", str(one), str(fake))
    assert code == 2 and "the shards overlap" in output
    code, output = evalh("merge", str(one), str(two), "-o", str(two))
    assert code == 2 and "is a file the run reads" in output  # never over a shard's report
    code, output = evalh(
        "merge", str(one), str(two), "-o", str(suite_dir / "m.json"), str(suite_dir / "m.xml")
    )
    assert code == 2 and "m.xml: is not a JSON report" in output and "its own -o" in output


def test_merge_against_a_baseline_fails_on_new_failures_only(suite_dir: Path) -> None:
    config = str(suite_dir / "suite.yaml")
    whole = suite_dir / "whole.json"
    evalh("run", config, "-o", str(whole), *RUN_FLAGS)
    paths = [suite_dir / f"s{k}.json" for k in (1, 2)]
    for k, out in enumerate(paths, 1):
        evalh("run", config, "--shard", f"{k}/2", "-o", str(out), *RUN_FLAGS)
    summary = suite_dir / "summary.md"
    flags = ("--baseline", str(whole), "--fail-on", "regressions", "-o", str(summary), "--no-table")
    code, output = evalh("merge", *map(str, paths), *flags)
    assert code == 0, output  # the same failures as the baseline: none is new
    assert evalh("merge", *map(str, paths), "--no-table")[0] == 1  # without it, a failure fails

    def fixed_then_broken(data: dict[str, Any]) -> None:  # the baseline had every row passing
        for row in data["results"]["results"]:
            row.update(success=True, failureReason=0)

    passing = shard_copy(whole, suite_dir / "passing.json", fixed_then_broken)
    code, output = evalh("merge", *map(str, paths), "--baseline", str(passing), "--fail-on", "regressions")
    assert code == 1 and "regression" in output.lower(), output


def test_an_interrupted_shard_makes_the_merge_fail_and_is_marked(suite_dir: Path) -> None:
    config = str(suite_dir / "suite.yaml")
    flags = ("--filter-pattern", "apple|pear", "--filter-providers", "echo", *RUN_FLAGS)
    paths = [suite_dir / f"s{k}.json" for k in (1, 2)]
    for k, out in enumerate(paths, 1):
        assert evalh("run", config, "--shard", f"{k}/2", "-o", str(out), *flags)[0] == 0

    def interrupted(data: dict[str, Any]) -> None:
        block = data["results"]["evalh"]
        block.update(interrupted=True, interruptedBy="SIGTERM", notRun=3)

    stopped = shard_copy(paths[1], suite_dir / "stopped.json", interrupted)
    merged = suite_dir / "merged.json"
    code, output = evalh("merge", str(paths[0]), str(stopped), "-o", str(merged))
    assert code == 1 and "was interrupted" in output
    block = json.loads(merged.read_text(encoding="utf-8"))["results"]["evalh"]
    assert (block["interrupted"], block["interruptedBy"], block["notRun"]) == (True, "SIGTERM", 3)
    assert evalh("merge", *map(str, paths))[0] == 0
