"""Hostile JSON reports and references (issue 23): every command that reads a report file refuses a bad
one with exit 2 and one paragraph naming the file and the JSON path of the bad field, never a crash; a
device as a report or config, a huge ``latest~N`` and a NUL in ``.env`` are located errors too; and text
from a report never drives the terminal (escape sequences shown escaped, rich markup shown as text)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalh.errors import ConfigError
from evalh.viewer.sources import GivenRuns, StoredRuns
from tests.store.helpers import evalh, report, write_config

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m[bold red]markup[/]"
RAW = ("\x1b", "\x9b", "\x07")


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """A real report: two tests, one passing, one failing."""
    config = write_config(tmp_path, {"one?": "yes", "two?": "no"})
    evalh("run", config, "--no-table", "--no-write", "-o", tmp_path / "good.json")
    return tmp_path / "good.json"


def _hostile(good: Path, name: str, change: Callable[[dict[str, Any]], Any]) -> Path:
    data = report(good)
    change(data)
    path = good.parent / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _row(data: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = data["results"]["results"][1]
    return row


# (the file's name, the change, the JSON path the error names)
WRONG_FIELDS = [
    ("vars.json", lambda d: _row(d).update(vars=1), "results.results[1].vars must be an object or null"),
    ("prompt.json", lambda d: _row(d).update(prompt="Say hi"), "results.results[1].prompt must be an object"),
    ("index.json", lambda d: _row(d).update(testIdx=-1), "results.results[1].testIdx must be a whole number"),
    (
        "score.json",
        lambda d: _row(d).update(score="high"),
        "results.results[1].score must be a finite number",
    ),
    (
        "component.json",
        lambda d: _row(d)["gradingResult"]["componentResults"].append(7),
        "results.results[1].gradingResult.componentResults[1] must be an object or null, not the number 7",
    ),
    (
        "rows.json",
        lambda d: d["results"].update(results={"a": 1}),
        "results.results must be a list, not an object",
    ),
    ("missing.json", lambda d: d["results"].pop("results"), "results.results is missing"),
    ("stats.json", lambda d: d["results"]["stats"].update(successes=[1]), "results.stats.successes must be"),
    (
        "named.json",
        lambda d: _row(d).update(namedScores={"x": "1"}),
        "results.results[1].namedScores.x must be",
    ),
    (
        "key.json",
        lambda d: _row(d).update(namedScores={ESCAPES: "1"}),
        "results.results[1].namedScores['\\x1b]0;pwned\\x07",
    ),
]


@pytest.mark.parametrize(("name", "change", "path"), WRONG_FIELDS, ids=[case[0] for case in WRONG_FIELDS])
def test_a_field_of_the_wrong_type_is_named_by_every_command(
    good: Path, name: str, change: Callable[[dict[str, Any]], Any], path: str
) -> None:
    bad = _hostile(good, name, change)
    for args in (
        ["runs", "import", bad],
        ["diff", good, bad],
        ["diff", bad, good],
        ["view", bad, "--no-open"],
    ):
        result = evalh(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("evalh: error: ") and str(bad) in result.stderr, result.stderr
        assert path in result.stderr and "is not an evalh or promptfoo JSON report" in result.stderr
        assert "Traceback" not in result.output and not any(char in result.output for char in RAW)
        assert len(result.stderr.strip().splitlines()) == 1  # one paragraph


@pytest.mark.parametrize(("name", "change", "path"), WRONG_FIELDS, ids=[case[0] for case in WRONG_FIELDS])
@pytest.mark.parametrize("flag", ["--retry-errors", "--filter-failing", "--filter-errors-only"])
def test_a_field_of_the_wrong_type_is_named_by_the_run_flags_reading_a_report(
    good: Path, name: str, change: Callable[[dict[str, Any]], Any], path: str, flag: str
) -> None:
    bad = _hostile(good, name, change)
    config = good.parent / "evalh.yaml"
    report = ["-o", bad] if flag == "--retry-errors" else [bad]  # --retry-errors reads the report it rewrites
    result = evalh("run", config, "--no-table", "--no-write", flag, *report)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("evalh: error: ") and str(bad) in result.stderr, result.stderr
    assert path in result.stderr and "is not an evalh or promptfoo JSON report" in result.stderr
    assert "Traceback" not in result.output and not any(char in result.output for char in RAW)
    assert len(result.stderr.strip().splitlines()) == 1  # one paragraph


def _text_with(good: Path, sentinel: str, text: str) -> str:
    """The report's text with the first row's score written as ``text`` (e.g. NaN, which JSON lacks)."""
    data = report(good)
    data["results"]["results"][0]["score"] = sentinel
    return json.dumps(data).replace(json.dumps(sentinel), text, 1)


def test_nesting_and_huge_numbers_are_bounded(good: Path) -> None:
    from evalh.reports.codec_check import MAX_REPORT_DEPTH  # new with this check

    cases = {
        "deep.json": ("[" * 5000 + "]" * 5000, f"nested deeper than {MAX_REPORT_DEPTH} levels"),
        "deepish.json": ("[" * 300 + "]" * 300, f"nested deeper than {MAX_REPORT_DEPTH} levels"),
        "huge.json": ("9" * 5000, "a whole number has more than 4,000 digits"),
        "nan.json": ("NaN", "results.results[0].score must be a finite number or null, not the number nan"),
        "inf.json": ("1e999", "results.results[0].score must be a finite number or null, not the number inf"),
    }
    for name, (text, expected) in cases.items():
        path = good.parent / name
        path.write_text(_text_with(good, "@@score@@", text), encoding="utf-8")
        config = good.parent / "evalh.yaml"
        retry = ["run", config, "--no-table", "--no-write", "--retry-errors", "-o", path]
        failing = ["run", config, "--no-table", "--no-write", "--filter-failing", path]
        for args in (["runs", "import", path], ["diff", good, path], ["merge", path], retry, failing):
            result = evalh(*args)
            assert result.exit_code == 2 and expected in result.stderr, (name, args, result.output)
            assert str(path) in result.stderr
    assert "deep.json:1:" in evalh("diff", good, good.parent / "deep.json").stderr  # where: line, column
    for index in (2**64, 1.5, True):
        data = report(good)
        data["results"]["results"][0]["testIdx"] = index
        (good.parent / "index.json").write_text(json.dumps(data), encoding="utf-8")
        refused = evalh("diff", good, good.parent / "index.json")
        assert refused.exit_code == 2, refused.output
        assert "results.results[0].testIdx must be a whole number from 0 to" in refused.stderr


def test_the_viewer_and_merge_read_reports_through_the_same_check(good: Path) -> None:
    from evalh.reports.codec_check import check_row  # new with this check

    bad = _hostile(
        good, "viewer.json", lambda d: _row(d).update(response={"output": "x", "tokenUsage": "many"})
    )
    with pytest.raises(ConfigError, match=r"results\.results\[1\]\.response\.tokenUsage must be an object"):
        GivenRuns([str(bad)])
    metric = _hostile(
        good,
        "metric.json",
        lambda d: _row(d)["gradingResult"]["componentResults"][0]["assertion"].update(metric={}),
    )
    merged = evalh("merge", metric)  # merge would make it a key of the named scores: unhashable
    assert merged.exit_code == 2, merged.output
    assert "results.results[1].gradingResult.componentResults[0].assertion.metric must be" in merged.stderr
    merged = evalh("merge", bad)
    assert (
        merged.exit_code == 2 and "results.results[1].response.tokenUsage must be an object" in merged.stderr
    )
    with pytest.raises(ConfigError, match=r"x\.json: is not an evalh .*results\.results\[4\]\.vars must be"):
        check_row({"vars": "v"}, "x.json", 4)


def test_an_imported_report_is_read_back_whole_by_show_and_the_viewer(good: Path) -> None:
    assert evalh("runs", "import", good).exit_code == 0
    shown = evalh("runs", "show", "latest")
    assert shown.exit_code == 0 and "FAIL" in shown.stdout
    page = StoredRuns().page("latest", 0, 10)
    assert len(page["lines"]) == 2


def test_devices_and_fifos_are_refused_not_read(good: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # opening it would block forever: it is never opened
    for target in ("/dev/zero", str(fifo)):
        for args in (["runs", "import", target], ["diff", target, good], ["view", target, "--no-open"]):
            result = evalh(*args)
            assert result.exit_code == 2 and "is not a regular file" in result.stderr, (args, result.output)
    assert evalh("runs", "import", tmp_path).exit_code == 2
    for args in (
        ["validate", "/dev/zero"],
        ["validate", str(fifo)],
        ["run", "-c", "/dev/zero", "--no-write"],
    ):
        result = evalh(*args)
        assert result.exit_code == 2 and "is not a regular file" in result.stderr, (args, result.output)


def test_a_huge_latest_n_names_no_run(good: Path) -> None:
    assert evalh("runs", "import", good).exit_code == 0
    for ref in ("latest~99999999999999999999999", "latest~" + "9" * 5000, "latest~1"):
        for args in (["runs", "show", ref], ["diff", ref, "latest"], ["view", ref, "--no-open"]):
            result = evalh(*args)
            assert result.exit_code == 2 and "no run" in result.stderr, (args, result.output)
    assert evalh("runs", "show", "latest~0").exit_code == 0


def test_a_nul_in_the_env_file_is_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(b"A=1\n# a comment may hold \x00\nB=x\x00y\n")
    for args in (["validate", config], ["run", config, "--no-write", "--no-table"]):
        result = evalh(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("evalh: error: .env:3:4: the value holds a NUL character")
    (tmp_path / ".env").write_bytes(b'A="multi\nline \x00"\n')
    assert evalh("validate", config).stderr.startswith("evalh: error: .env:2:6: the value holds a NUL")
    (tmp_path / "other.env").write_bytes(b"K=\x00\n")
    named = evalh("validate", config, "--env-file", tmp_path / "other.env")
    assert named.exit_code == 2 and "other.env:1:3: the value holds a NUL" in named.stderr


def test_text_from_reports_never_drives_the_terminal(good: Path, tmp_path: Path) -> None:
    def plant(data: dict[str, Any]) -> None:
        data["evalId"] = "eval-x" + ESCAPES
        data["config"]["description"] = ESCAPES
        data["results"]["timestamp"] = ESCAPES
        row = _row(data)
        row["description"] = row["testCase"]["description"] = ESCAPES
        row["response"]["output"] = ESCAPES
        row["error"] = row["gradingResult"]["reason"] = ESCAPES

    bad = _hostile(good, "escapes.json", plant)
    outputs = [
        evalh("runs", "import", bad),
        evalh("runs", "list"),
        evalh("runs", "show", "latest"),
        evalh("runs", "show", "latest", "--json"),
        evalh("diff", good, bad),
        evalh("diff", good, bad, "--json"),
        evalh("runs", "import", bad),  # "already stored": an error message quoting the run id
        evalh("runs", "delete", "latest"),
    ]
    for result in outputs:
        assert result.exit_code in (0, 1, 2), result.output
        assert not any(char in result.output for char in RAW), repr(result.output)
        assert "\\x1b]0;pwned" in result.output or "\\u001b]0;pwned" in result.output, repr(result.output)
    assert "[bold red]markup[/]" in outputs[4].stdout  # markup shown as the text it is
    assert json.loads(outputs[3].stdout)["evalId"] == "eval-x" + ESCAPES  # --json: the same value, escaped
