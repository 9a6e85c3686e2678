"""``evalh merge`` reads reports it did not write in this process: a shard report edited by hand, cut short
or crafted is refused by file with exit 2 and a message, never a traceback nor a hang; and the merged
reports share one run id, as ``evalh run``'s do. Through the CLI, in-process."""

from __future__ import annotations

import copy
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.common.limits import MAX_SHARDS
from evalh.reports.markdown import escape_inline

SUITE = """
description: merged suite
prompts: ["Q {{q}}"]
providers: [echo]
tests:
  - {description: a, vars: {q: one}, assert: [{type: contains, value: one}]}
  - {description: b, vars: {q: two}, assert: [{type: contains, value: three}]}
  - {description: c, vars: {q: three}, assert: [{type: contains, value: three}]}
"""
FLAGS = ("--no-table", "--no-progress-bar", "--no-write", "--no-cache")


def evalh(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.output


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    config = tmp_path / "suite.yaml"
    config.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    paths = [tmp_path / f"shard-{k}.json" for k in (1, 2)]
    for k, path in enumerate(paths, 1):
        code, output = evalh("run", config, "--shard", f"{k}/2", "-o", path, *FLAGS)
        assert code in (0, 1), output
    return paths


def edited(source: Path, change: Callable[[dict[str, Any]], Any]) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    change(data)
    target = source.with_name("edited.json")
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


def _row(data: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = data["results"]["results"][0]
    return row


# each damage, and the JSON path the refusal names (the check of every report file read: issue 23)
BROKEN: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "evalh block a list": (
        lambda d: d["results"].__setitem__("evalh", [1]),
        "results.evalh must be an object",
    ),
    "config a list": (lambda d: d.__setitem__("config", [1]), "config must be an object"),
    "a prompt column a number": (
        lambda d: d["results"].__setitem__("prompts", [1]),
        "results.prompts[0] must be an object",
    ),
    "provider usage tokens a string": (
        lambda d: d["results"]["evalh"].__setitem__(
            "providerUsage", [{"provider": "echo", "tokens": "many"}]
        ),
        "results.evalh.providerUsage[0].tokens must be an object",
    ),
    "testIdx a word": (
        lambda d: _row(d).__setitem__("testIdx", "abc"),
        "results.results[0].testIdx must be a whole",
    ),
    "score a word": (
        lambda d: _row(d).__setitem__("score", "high"),
        "results.results[0].score must be a finite",
    ),
    "stats a list": (lambda d: d["results"].__setitem__("stats", [1]), "results.stats must be an object"),
    "notRun a word": (
        lambda d: d["results"]["evalh"].__setitem__("notRun", "some"),
        "results.evalh.notRun must be a whole number",
    ),
}


@pytest.mark.parametrize("damage", BROKEN, ids=list(BROKEN))
def test_a_malformed_shard_report_is_refused_by_name(shards: list[Path], damage: str) -> None:
    change, path = BROKEN[damage]
    broken = edited(shards[0], change)
    code, output = evalh("merge", broken, shards[1], "--no-table")
    assert code == 2, output
    assert f"{broken}: is not an evalh or promptfoo JSON report: {path}" in output, output
    assert "internal error" not in output


def test_a_shard_record_merge_cannot_hold_is_refused_before_listing_shares(shards: list[Path]) -> None:
    def claim(index: int, total: int) -> Callable[[dict[str, Any]], Any]:
        return lambda d: d["results"]["evalh"]["shard"].update(index=index, total=total)

    for index, total in ((1, 10**20), (0, 2), (-1, 2), (3, 2), (1, MAX_SHARDS + 1)):
        broken = edited(shards[0], claim(index, total))
        code, output = evalh("merge", broken, shards[1], "--no-table")  # once hung listing 10**20 shares
        assert code == 2 and f"{broken}: its shard record" in output, output
        assert "is not one evalh run --shard writes" in output


def test_merge_names_at_most_ten_missing_shares(shards: list[Path]) -> None:
    wide = edited(shards[0], lambda d: d["results"]["evalh"]["shard"].update(total=MAX_SHARDS))
    code, output = evalh("merge", wide, "--no-table")
    assert code == 2 and "shards 2/1000, 3/1000" in output and "12/1000" not in output
    assert f"11/1000 and {MAX_SHARDS - 11} more missing" in output, output


def test_shard_refuses_more_shares_than_a_ci_system_runs(tmp_path: Path) -> None:
    config = tmp_path / "suite.yaml"
    config.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    code, output = evalh("run", config, "--shard", f"1/{MAX_SHARDS + 1}", *FLAGS)
    assert code == 2 and f"at most {MAX_SHARDS}" in output, output
    assert evalh("run", config, "--shard", f"{MAX_SHARDS}/{MAX_SHARDS}", *FLAGS)[0] == 0


def test_every_report_of_a_merge_carries_one_run_id(shards: list[Path], tmp_path: Path) -> None:
    merged, summary, page = tmp_path / "merged.json", tmp_path / "summary.md", tmp_path / "merged.html"
    baseline = copy.deepcopy(json.loads(shards[0].read_text(encoding="utf-8")))
    (tmp_path / "base.json").write_text(json.dumps(baseline), encoding="utf-8")
    code, output = evalh(
        "merge", *shards, "-o", merged, "-o", summary, "-o", page, "--baseline", tmp_path / "base.json"
    )
    assert code == 1, output  # test b fails
    eval_id = json.loads(merged.read_text(encoding="utf-8"))["evalId"]
    assert eval_id.startswith("eval-")
    assert f"run {escape_inline(eval_id)}" in summary.read_text(encoding="utf-8")  # escaped as Markdown
    assert eval_id in page.read_text(encoding="utf-8")
    assert f"Comparing {eval_id}" in output


def _moved(shards: list[Path], take: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> list[Path]:
    """The shards with the rows ``take`` picks from shard 2's moved into shard 1's report."""
    one, two = (json.loads(path.read_text(encoding="utf-8")) for path in shards)
    moved = take(two["results"]["results"])
    one["results"]["results"] += moved
    two["results"]["results"] = [row for row in two["results"]["results"] if row not in moved]
    paths = [path.with_name(f"moved-{path.name}") for path in shards]
    for path, data in zip(paths, (one, two), strict=True):
        path.write_text(json.dumps(data), encoding="utf-8")
    return paths


def test_rows_are_refused_in_a_shard_that_does_not_own_them(shards: list[Path]) -> None:
    """Each shard's report holds its own tests' rows only, as its shard record says (issue 23)."""
    tests = {
        k: {row["testIdx"] for row in json.loads(p.read_text())["results"]["results"]}
        for k, p in enumerate(shards)
    }
    assert tests[0] and tests[1] and not tests[0] & tests[1]
    code, output = evalh("merge", *_moved(shards, lambda rows: rows[:1]), "--no-table")
    assert code == 2 and "moved-shard-1.json: holds rows of" in output and "says shard 1/2 ran" in output, (
        output
    )

    def relabel(data: dict[str, Any]) -> None:  # shard 1's record claims one more test than it ran
        data["results"]["evalh"]["shard"]["tests"] += 1

    code, output = evalh(
        "merge",
        edited(_moved(shards, lambda rows: rows[:1])[0], relabel),
        _moved(shards, lambda rows: rows[:1])[1],
        "--no-table",
    )
    assert code == 2 and "which --shard 2/2 runs, not this shard (1/2)" in output, output
    forged = copy.deepcopy(json.loads(shards[0].read_text())["results"]["results"][0])
    forged["description"] = forged["testCase"]["description"] = "forged"
    code, output = evalh(
        "merge", edited(shards[0], lambda d: d["results"]["results"].append(forged)), shards[1], "--no-table"
    )
    assert code == 2 and "whose description or vars differ from its row" in output, output
    assert evalh("merge", *shards, "--no-table")[0] in (0, 1)  # the shards as written still merge
