"""The ``evalh`` command: exit codes, reports, messages, interrupts. A real subprocess where the process
matters (signals, imports, a few smoke runs); in-process through Typer's runner for the broken configs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml
from typer.testing import CliRunner

from evalh.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "configs" / "quickstart.yaml"


def evalh(*args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(
        [sys.executable, "-m", "evalh", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


MIXED_SUITE = """
    description: mixed
    tests:
      - description: passes
        output: hello world
        assert:
          - {type: contains, value: hello}
      - description: fails
        output: goodbye
        assert:
          - {type: contains, value: hello}
      - description: errors
        output: not json
        assert:
          - {type: python, value: "1 / 0"}
"""


def test_help_lists_commands_and_exit_codes() -> None:
    result = evalh("--help")
    assert result.returncode == 0
    for word in ("run", "validate", "schema", "list", "init", "cache", "130"):
        assert word in result.stdout
    run_help = evalh("run", "--help")
    assert "--fail-under" in run_help.stdout and "Exit codes" in run_help.stdout


def test_cli_import_stays_light() -> None:
    # evalh.model too: its ~30 dataclasses cost a quarter of `evalh --help` to build
    heavy = ["numpy", "onnxruntime", "jinja2", "jsonschema", "httpx", "rich", "yaml", "tokenizers"]
    heavy += ["evalh.model", "evalh.config", "evalh.runner"]
    code = f"import sys, evalh.cli.app; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_validate_and_list_load_no_model_or_network_library() -> None:
    # The registry's declarations are read without numpy (about 0.4 s), onnxruntime or httpx.
    heavy = ["numpy", "onnxruntime", "httpx", "tokenizers"]
    examples = sorted(str(path) for path in (ROOT / "examples" / "configs").glob("*.yaml"))
    code = (
        "import sys\nfrom evalh.cli.app import main\n"
        f"for argv in [['list', 'assertions'], *[['validate', e] for e in {examples!r}]]:\n"
        "    sys.argv = ['evalh', *argv]\n"
        "    try:\n        main()\n    except SystemExit as stop:\n        assert not stop.code, argv\n"
        f"print([m for m in {heavy!r} if m in sys.modules], file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"
    assert "similar" in result.stdout and "valid" in result.stdout


def test_quickstart_passes_and_writes_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = evalh("run", str(QUICKSTART), "-o", str(out / "r.json"), "-o", str(out / "r.junit.xml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads((out / "r.json").read_text(encoding="utf-8"))
    stats = report["results"]["stats"]
    assert stats["successes"] == 4 and stats["failures"] == 0 and stats["errors"] == 0
    similar = [
        component
        for row in report["results"]["results"]
        for component in row["gradingResult"]["componentResults"]
        if component["assertion"]["type"] == "similar"
    ]
    assert similar and all(0.6 <= c["score"] <= 1.0 for c in similar)
    suites = JUnitXml.fromfile(str(out / "r.junit.xml"))
    assert suites.tests == 4 and suites.failures == 0 and suites.errors == 0


def test_failing_suite_exits_1_and_junit_separates_failure_from_error(tmp_path: Path) -> None:
    config = write(tmp_path / "mixed.yaml", MIXED_SUITE)
    junit = tmp_path / "r.xml"
    result = evalh("run", str(config), "-o", str(junit), "-o", str(tmp_path / "r.json"))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    xml = JUnitXml.fromfile(str(junit))
    assert (xml.tests, xml.failures, xml.errors) == (3, 1, 1)
    outcomes = {case.name: [type(r).__name__ for r in case.result] for suite in xml for case in suite}
    assert sorted(outcomes.values()) == [[], [Error.__name__], [Failure.__name__]]
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    reasons = {row["description"]: row["failureReason"] for row in report["results"]["results"]}
    assert reasons == {"passes": 0, "fails": 1, "errors": 2}


def test_fail_under_accepts_a_pass_rate(tmp_path: Path) -> None:
    config = write(tmp_path / "mixed.yaml", MIXED_SUITE)
    assert evalh("run", str(config), "--fail-under", "30", "--no-table").returncode == 0
    assert evalh("run", str(config), "--fail-under", "34", "--no-table").returncode == 1


def test_filter_failing_reruns_only_failed_and_errored_tests(tmp_path: Path) -> None:
    config = write(tmp_path / "mixed.yaml", MIXED_SUITE)
    first = tmp_path / "first.json"
    evalh("run", str(config), "-o", str(first), "--no-table")
    second = tmp_path / "second.json"
    result = evalh("run", str(config), "--filter-failing", str(first), "-o", str(second), "--no-table")
    assert result.returncode == 1
    rows = json.loads(second.read_text(encoding="utf-8"))["results"]["results"]
    assert sorted(row["description"] for row in rows) == ["errors", "fails"]


@pytest.mark.parametrize(
    "content",
    ['{"results": {"results": [1]}}', '{"results": {"results": 5}}', '{"results": []}', "not json"],
)
def test_filter_failing_with_a_file_that_is_not_a_report_is_exit_2(tmp_path: Path, content: str) -> None:
    config = write(tmp_path / "mixed.yaml", MIXED_SUITE)
    report = tmp_path / "old.json"
    report.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(config), "--filter-failing", str(report), "--no-table"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("evalh: error: --filter-failing: ") and str(report) in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    nope = str(tmp_path / "nope.json")
    missing = CliRunner().invoke(app, ["run", str(config), "--filter-failing", nope, "--no-table"])
    assert missing.exit_code == 2 and "nope.json" in missing.stderr


def test_report_write_failure_after_the_run_names_it_and_keeps_the_rest(tmp_path: Path) -> None:
    # the paths are fine when checked before the run; the provider then puts a file where the
    # report's directory should be created
    script = write(tmp_path / "block.py", "open('blocker', 'w').write('in the way')\nprint('ok')\n")
    passing = (
        f'prompts: ["x"]\nproviders: ["exec:{sys.executable} {script.name}"]\n'
        "tests:\n  - assert: [{type: equals, value: ok}]\n"
    )
    config = write(tmp_path / "pass.yaml", passing)
    blocker = tmp_path / "blocker"
    bad, good, rows = blocker / "r.json", tmp_path / "r.junit.xml", tmp_path / "r.jsonl"
    result = evalh("run", str(config), "-o", str(bad), "-o", str(good), "-o", str(rows), "--no-table")
    assert result.returncode == 1
    assert result.stderr.startswith(f"evalh: error: {bad}: cannot write the report")
    assert "Traceback" not in result.stderr
    assert "Pass rate" in result.stdout  # the summary is still printed
    assert JUnitXml.fromfile(str(good)).tests == 1
    assert len(rows.read_text(encoding="utf-8").splitlines()) == 1


def test_var_flag_and_filter_pattern_with_echo_provider(tmp_path: Path) -> None:
    config = write(
        tmp_path / "echo.yaml",
        """
        prompts: ["Hi {{name}}, {{topic}}"]
        providers: [echo]
        tests:
          - description: alpha
            vars: {topic: cats}
            assert: [{type: equals, value: "Hi Ada, cats"}]
          - description: beta
            vars: {topic: dogs}
            assert: [{type: contains, value: dogs}]
        """,
    )
    out = tmp_path / "r.json"
    result = evalh("run", str(config), "--var", "name=Ada", "--filter-pattern", "^alp", "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]["results"]
    assert [row["response"]["output"] for row in rows] == ["Hi Ada, cats"]


def test_exec_provider_failure_is_an_error_row_and_the_run_goes_on(tmp_path: Path) -> None:
    script = write(
        tmp_path / "app.py",
        """
        import sys
        prompt = sys.argv[1]
        if "boom" in prompt:
            sys.exit("model crashed")
        print(prompt.upper())
        """,
    )
    config = write(
        tmp_path / "exec.yaml",
        f"""
        prompts: ["{{{{q}}}}"]
        providers: ["exec:{sys.executable} {script.name}"]
        tests:
          - vars: {{q: hello}}
            assert: [{{type: equals, value: HELLO}}]
          - vars: {{q: boom}}
            assert: [{{type: equals, value: BOOM}}]
        """,
    )
    out = tmp_path / "r.json"
    result = evalh("run", str(config), "-o", str(out))
    assert result.returncode == 1
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]["results"]
    assert [row["failureReason"] for row in rows] == [0, 2]
    assert "model crashed" in rows[1]["error"]


def test_unknown_report_extension_is_a_usage_error_before_running(tmp_path: Path) -> None:
    config = write(tmp_path / "mixed.yaml", MIXED_SUITE)
    result = evalh("run", str(config), "-o", str(tmp_path / "r.docx"))
    assert result.returncode == 2
    assert "r.docx" in result.stderr and "Traceback" not in result.stderr


def test_missing_config_is_exit_2_with_a_message(tmp_path: Path) -> None:
    result = evalh("run", cwd=tmp_path)
    assert result.returncode == 2
    assert "evalh.yaml" in result.stderr and "Traceback" not in result.stderr
    result = evalh("validate", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2 and "nope.yaml" in result.stderr


def test_default_config_is_found_in_the_working_directory(tmp_path: Path) -> None:
    write(
        tmp_path / "promptfooconfig.yaml", "tests:\n  - output: ok\n    assert: [{type: equals, value: ok}]\n"
    )
    result = evalh("run", "--no-table", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_validate_schema_list_and_init(tmp_path: Path) -> None:
    valid = evalh("validate", str(QUICKSTART))
    assert valid.returncode == 0 and "valid" in valid.stdout
    schema = json.loads(evalh("schema").stdout)
    assert schema["$id"].endswith("evalh.schema.json")
    assert json.loads(evalh("schema", "--report").stdout)["$id"].endswith("report.schema.json")
    listing = evalh("list", "assertions")
    assert (
        listing.returncode == 0 and "similar:euclidean" in listing.stdout and "levenshtein" in listing.stdout
    )
    providers = evalh("list", "providers")
    assert "openai:embedding:" in providers.stdout and "local" in providers.stdout
    assert evalh("list", "things").returncode == 2
    init = evalh("init", str(tmp_path / "starter"))
    assert init.returncode == 0
    first_line = (tmp_path / "starter" / "evalh.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=evalh.schema.json"
    written = json.loads((tmp_path / "starter" / "evalh.schema.json").read_text(encoding="utf-8"))
    assert written == schema and "similar:euclidean" in json.dumps(written)  # the full schema, for editors
    assert evalh("run", str(tmp_path / "starter" / "evalh.yaml"), "--no-table").returncode == 0
    assert evalh("init", str(tmp_path / "starter")).returncode == 2  # no silent overwrite


def test_cache_info_and_clear(tmp_path: Path) -> None:
    assert evalh("run", str(QUICKSTART), "--no-table").returncode == 0
    info = evalh("cache", "info")
    assert info.returncode == 0 and "embedding:" in info.stdout
    cleared = evalh("cache", "clear")
    assert cleared.returncode == 0 and "Cleared" in cleared.stdout
    assert "(empty)" in evalh("cache", "info").stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_interrupt_exits_130_and_keeps_finished_rows(tmp_path: Path) -> None:
    script = write(
        tmp_path / "slow.py",
        """
        import sys, time
        if sys.argv[1] != "fast":
            time.sleep(60)
        print("done")
        """,
    )
    tests = "\n".join(f"  - vars: {{q: {'fast' if i == 0 else 'slow'}}}" for i in range(4))
    config = write(
        tmp_path / "slow.yaml",
        f'prompts: ["{{{{q}}}}"]\nproviders: ["exec:{sys.executable} {script.name}"]\n'
        f"defaultTest:\n  assert: [{{type: equals, value: done}}]\ntests:\n{tests}\n",
    )
    jsonl, report = tmp_path / "r.jsonl", tmp_path / "r.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalh",
            "run",
            str(config),
            "-o",
            str(jsonl),
            "-o",
            str(report),
            "--no-table",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (jsonl.exists() and jsonl.read_text(encoding="utf-8").strip()):
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    assert [row["response"]["output"] for row in rows] == ["done"]
    assert len(jsonl.read_text(encoding="utf-8").strip().splitlines()) == 1


BROKEN = ROOT / "tests" / "fixtures" / "broken"


def _broken_cases() -> list[dict[str, object]]:
    import yaml

    cases: list[dict[str, object]] = yaml.safe_load((BROKEN / "cases.yaml").read_text(encoding="utf-8"))[
        "cases"
    ]
    return cases


def _check_broken(case: dict[str, object], returncode: int, stderr: str) -> None:
    assert returncode == 2, stderr
    assert "Traceback" not in stderr
    assert stderr.startswith("evalh: error: ")
    for expected in case["expect"]:  # type: ignore[attr-defined]
        assert expected in stderr, f"{expected!r} not in {stderr!r}"


def _flags(case: dict[str, object]) -> list[str]:
    return [str(flag) for flag in case.get("cli", [])]  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", _broken_cases(), ids=lambda case: str(case["fixture"]))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_broken_configs_exit_2_with_a_located_message(
    case: dict[str, object], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process through the real command line (Typer's runner); the smoke test below covers the process.
    monkeypatch.setenv("COLUMNS", "160")
    result = CliRunner().invoke(app, [command, str(BROKEN / str(case["fixture"])), *_flags(case)])
    _check_broken(case, result.exit_code, result.stderr)


SMOKE_FIXTURES = ("unknown_assertion_type.yaml", "bad_yaml.yaml")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_broken_configs_exit_2_in_a_real_process(command: str) -> None:
    cases = [case for case in _broken_cases() if case["fixture"] in SMOKE_FIXTURES]
    assert len(cases) == len(SMOKE_FIXTURES)
    for case in cases:
        result = evalh(command, str(BROKEN / str(case["fixture"])), *_flags(case))
        _check_broken(case, result.returncode, result.stderr)


RUBRIC_IN_OPTIONS = {
    "defaultTest": """
        defaultTest:
          options: {rubricPrompt: "file://missing.txt"}
        tests:
          - output: hi
            assert: [{type: llm-rubric, value: polite, provider: "openai:chat:gpt-4o-mini"}]
    """,
    "tests[0]": """
        tests:
          - output: hi
            options: {rubricPrompt: "file://missing.txt"}
            assert: [{type: llm-rubric, value: polite, provider: "openai:chat:gpt-4o-mini"}]
    """,
}


@pytest.mark.parametrize("where", sorted(RUBRIC_IN_OPTIONS))
def test_validate_reads_a_file_rubric_prompt_in_options(tmp_path: Path, where: str) -> None:
    config = write(tmp_path / "evalh.yaml", RUBRIC_IN_OPTIONS[where])
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2, result.output
    assert f"{where}.options.rubricPrompt: file not found: " in result.stderr
    assert "missing.txt" in result.stderr
