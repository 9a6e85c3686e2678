"""``--shard i/N`` (issue 13): the partition of tests (disjoint, complete, balanced, stable when tests are
appended or reordered) and how it combines with the other flags, through the CLI."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.errors import ConfigError
from evalh.model import Prompt, ProviderSpec, Suite, TestCase
from evalh.runner.sharding import Shard, assign_shards, parse_shard, select_shard, shard_keys
from tests.reports.test_json import SCHEMA_PATH

REPORT_SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def cases_named(names: list[str]) -> tuple[TestCase, ...]:
    return tuple(TestCase(index=i, description=name, vars={"n": name}) for i, name in enumerate(names))


def partition(names: list[str], total: int) -> dict[str, int]:
    tests = cases_named(names)
    shards = assign_shards(shard_keys(tests), [1] * len(tests), total)
    return {test.description or "": shard for test, shard in zip(tests, shards, strict=True)}


def test_parse_shard_takes_i_of_n_counted_from_one() -> None:
    assert parse_shard("2/3") == Shard(2, 3)
    assert parse_shard(" 1 / 1 ") == Shard(1, 1)
    for bad in ("0/3", "4/3", "1/0", "3", "a/b", "-1/3", "1/3/5", ""):
        with pytest.raises(ConfigError) as caught:
            parse_shard(bad)
        assert caught.value.where == "--shard"


@pytest.mark.parametrize("total", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("count", [0, 1, 2, 7, 10, 61])
def test_shards_are_disjoint_complete_and_equal_within_one_test(total: int, count: int) -> None:
    names = [f"test {i}" for i in range(count)]
    chosen = partition(names, total)
    assert sorted(chosen) == sorted(names)  # each test in exactly one shard
    sizes = [sum(1 for shard in chosen.values() if shard == k) for k in range(total)]
    assert sum(sizes) == count
    assert max(sizes) - min(sizes) <= 1, sizes


def test_weighted_shards_differ_by_less_than_one_tests_rows() -> None:
    rng = random.Random(7)
    tests = cases_named([f"t{i}" for i in range(200)])
    weights = [rng.choice([1, 2, 6]) for _ in tests]
    shards = assign_shards(shard_keys(tests), weights, 4)
    rows = [sum(w for w, s in zip(weights, shards, strict=True) if s == k) for k in range(4)]
    assert sum(rows) == sum(weights)
    assert max(rows) - min(rows) <= 2 * max(weights), rows


def test_the_partition_depends_on_identity_not_on_order() -> None:
    names = [f"case {i}" for i in range(40)]
    shuffled = names[:]
    random.Random(3).shuffle(shuffled)
    assert partition(names, 3) == partition(shuffled, 3)


def test_appending_tests_moves_at_most_n_minus_one_tests_per_test_added() -> None:
    names = [f"case {i}" for i in range(300)]
    before = partition(names, 4)
    after = partition([*names, *(f"new {i}" for i in range(5))], 4)
    moved = [name for name in names if before[name] != after[name]]
    assert len(moved) <= 5 * (4 - 1), moved
    # dealing the hash-sorted tests in turn (round robin) would move about 3 in 4 of them
    assert len(moved) < len(names) // 20


@pytest.mark.parametrize("total", [2, 3, 5])
def test_inserting_a_test_anywhere_moves_at_most_n_minus_one_others(total: int) -> None:
    for count in range(40):
        keys = [f"{2 * i + 1:03d}" for i in range(count)]
        before = dict(zip(keys, assign_shards(keys, [1] * count, total), strict=True))
        for place in range(count + 1):
            grown = [*keys, f"{2 * place:03d}"]  # sorts just before the test at ``place``
            after = dict(zip(grown, assign_shards(grown, [1] * len(grown), total), strict=True))
            assert sum(before[key] != after[key] for key in keys) <= total - 1


def test_equal_tests_are_told_apart_by_their_position_among_equals() -> None:
    tests = (TestCase(index=0, vars={"q": "x"}), TestCase(index=1, vars={"q": "x"}))
    first, second = shard_keys(tests)
    assert first != second
    assert shard_keys(tests[:1]) == [first]  # the first of them keeps its key


def suite_of(names: list[str]) -> Suite:
    return Suite(
        tests=cases_named(names), prompts=(Prompt("p {{n}}", "p"),), providers=(ProviderSpec("echo"),)
    )


def test_select_shard_keeps_config_indices_and_one_fingerprint() -> None:
    suite = suite_of([f"t{i}" for i in range(10)])
    picked = [select_shard(suite, Shard(k, 3), 1)[0] for k in (1, 2, 3)]
    indices = sorted(test.index for part in picked for test in part.tests)
    assert indices == list(range(10))
    assert {part.shard.fingerprint for part in picked if part.shard} == {picked[0].shard.fingerprint}  # type: ignore[union-attr]
    assert [part.shard.tests for part in picked if part.shard] == [len(part.tests) for part in picked]
    changed = suite_of([*(f"t{i}" for i in range(9)), "other"])
    assert select_shard(changed, Shard(1, 3), 1)[0].shard != picked[0].shard
    assert select_shard(suite, Shard(1, 3), 2)[0].shard != picked[0].shard  # --repeat is part of the run


SUITE = """
prompts: ["Say {{word}}", "Echo {{word}} now"]
providers: [echo]
tests:
  - {description: t1, vars: {word: apple}, assert: [{type: contains, value: apple, metric: hits}]}
  - {description: t2, vars: {word: pear}, assert: [{type: contains, value: plum, metric: hits}]}
  - {description: t3, vars: {word: fig}, assert: [{type: icontains, value: FIG}]}
  - {description: t4, vars: {word: kiwi}, assert: [{type: contains, value: kiwi}]}
  - {description: t5, vars: {word: lime}, assert: [{type: contains, value: lime, metric: hits}]}
"""


def write_config(tmp_path: Path, text: str = SUITE) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(textwrap.dedent(text), encoding="utf-8")
    return config


def run(config: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["run", str(config), "--no-table", "--no-progress-bar", "--no-write", *args]
    )
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def rows_of(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["results"]["results"]
    return rows


def shard_record(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["results"]["evalh"]["shard"]
    return record


def cells(rows: list[dict[str, Any]]) -> list[tuple[int, int, int, int]]:
    return [(r["repeatIdx"], r["testIdx"], r["providerIdx"], r["promptIdx"]) for r in rows]


def run_shards(tmp_path: Path, config: Path, total: int, *args: str) -> list[list[dict[str, Any]]]:
    parts = []
    for k in range(1, total + 1):
        out = tmp_path / f"s{k}.json"
        code, output = run(config, "--shard", f"{k}/{total}", "-o", str(out), *args)
        assert code in (0, 1), output
        assert f"--shard {k}/{total}:" in output
        assert (shard_record(out)["index"], shard_record(out)["total"]) == (k, total)
        jsonschema.validate(json.loads(out.read_text(encoding="utf-8")), REPORT_SCHEMA)  # its record too
        parts.append(rows_of(out))
    return parts


def test_shards_with_repeat_and_first_n_make_the_unsharded_run(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    whole = tmp_path / "whole.json"
    run(config, "-o", str(whole), "--repeat", "2", "-n", "4")
    parts = run_shards(tmp_path, config, 3, "--repeat", "2", "-n", "4")
    joined = sorted(cell for part in parts for cell in cells(part))
    assert joined == sorted(cells(rows_of(whole)))  # disjoint (no duplicate) and complete
    for part in parts:  # a test's repeats and prompts stay in its shard
        tests = {cell[1] for cell in cells(part)}
        assert len(cells(part)) == 4 * len(tests)
    assert {r["testIdx"] for r in rows_of(whole)} == {0, 1, 2, 3}  # -n applies before the shards


def test_an_empty_shard_runs_nothing_and_passes(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    parts = run_shards(tmp_path, config, 7, "--filter-pattern", "t1|t2")
    assert sorted(len(part) for part in parts) == [0, 0, 0, 0, 0, 2, 2]
    empty = next(k for k, part in enumerate(parts, 1) if not part)
    code, output = run(config, "--shard", f"{empty}/7", "--filter-pattern", "t1|t2")
    assert code == 0 and "0 of 2 test(s)" in output


def test_shard_refuses_a_random_sample_and_sequential_suites(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    code, output = run(config, "--shard", "1/2", "--filter-sample", "2")
    assert code == 2 and "--filter-sample" in output and "deterministic filter" in output
    stored = write_config(
        tmp_path,
        """
        prompts: ["Say {{word}}"]
        providers: [echo]
        tests:
          - {vars: {word: a}, options: {storeOutputAs: first}}
          - {vars: {word: "{{first}}"}}
        """,
    )
    code, output = run(stored, "--shard", "1/2")
    assert code == 2 and "storeOutputAs" in output and "without --shard" in output
    code, output = run(config, "--shard", "3/2")
    assert code == 2 and "--shard" in output and "from 1 to 2" in output


RETRY_PROVIDER = """
import os
def call_api(prompt, options, context):
    if os.path.exists({down!r}):
        return {{"error": "service down"}}
    return {{"output": prompt}}
"""


def test_retry_errors_on_a_shard_report_reruns_that_shard_and_keeps_its_record(tmp_path: Path) -> None:
    down = tmp_path / "down"
    (tmp_path / "prov.py").write_text(RETRY_PROVIDER.format(down=str(down)), encoding="utf-8")
    config = write_config(tmp_path, SUITE.replace("providers: [echo]", "providers: [python:prov.py]"))
    out = tmp_path / "s2.json"
    down.touch()
    code, _ = run(config, "--shard", "2/3", "-o", str(out), "--no-cache")
    before = rows_of(out)
    assert code == 1 and before and all(row["failureReason"] == 2 for row in before)
    record = shard_record(out)
    code, output = run(config, "--retry-errors", "--shard", "1/3", "-o", str(out))
    assert code == 2 and "shard 2/3's report, not shard 1/3's" in output
    down.unlink()
    code, output = run(config, "--retry-errors", "-o", str(out), "--no-cache")  # --shard not repeated
    after = rows_of(out)
    assert cells(after) == cells(before) and not any(row["failureReason"] == 2 for row in after), output
    assert shard_record(out) == record
