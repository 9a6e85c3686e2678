"""promptfoo's command-line habits (issue 10, item 8), through the CLI in process.

``evalh eval``; ``-o a.json b.xml``; ``-c a.yaml -c b.yaml`` merged; ``--env-file`` and ``.env``;
the ``--filter-*`` flags (each selecting nothing is exit 2 naming the flag); ``--retry-errors`` and
``--filter-errors-only``; ``--delay``, ``--description``, ``--table-cell-max-length``, ``--no-write``;
promptfoo flags evalh lacks get a message saying so.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.app import app
from evalh.reports.writers import supported_extensions


def evalh(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def rows_of(report: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    return rows


def clean(result: Result) -> str:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return " ".join(result.stderr.split())


SUITE = """
    prompts: ["Hi {{name}}", {raw: "Bye {{name}}", label: farewell}]
    providers: [echo, {id: echo, label: second}]
    tests:
      - description: alpha
        vars: {name: Ada}
        metadata: {area: billing, tags: [fast, smoke]}
      - description: beta
        vars: {name: Bob}
        metadata: {area: search}
      - description: gamma
        vars: {name: Cy}
"""


def test_eval_is_run_and_one_o_takes_several_report_paths(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    first, second = tmp_path / "a.json", tmp_path / "b.xml"
    result = evalh("eval", "-o", str(first), str(second), str(config), "--no-table")
    assert result.exit_code == 0, clean(result)
    assert len(rows_of(first)) == 12 and second.read_text(encoding="utf-8").startswith("<?xml")
    # the config named after the paths is still the config, not a third report
    assert config.read_text(encoding="utf-8") == textwrap.dedent(SUITE)


def test_one_o_takes_a_path_of_every_report_format(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    paths = [tmp_path / f"r{number}{extension}" for number, extension in enumerate(supported_extensions())]
    result = evalh("run", str(config), "-o", *map(str, paths), "--no-table", "--no-write")
    assert result.exit_code == 0, clean(result)  # summary.md was once taken as a second config
    assert [path.name for path in paths if not path.is_file()] == []


def test_promptfoo_flags_evalh_lacks_say_so(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    for flag in ("--share", "--watch", "-w", "--resume"):
        result = evalh("run", str(config), flag)
        assert result.exit_code == 2
        assert f"evalh does not support promptfoo's {flag}" in clean(result)
        assert "Did you mean" not in result.output


def test_several_configs_merge_as_promptfoo_merges_them(tmp_path: Path) -> None:
    providers = write(tmp_path / "providers.yaml", "description: models\nproviders: [echo]\n")
    write(tmp_path / "cases" / "p.txt", "Hi {{name}}\n")
    tests = write(
        tmp_path / "cases" / "tests.yaml",
        """
        description: cases
        prompts: [file://p.txt]
        tests:
          - vars: {name: Zed}
            assert: [{type: equals, value: Hi Zed}]
        """,
    )
    report = tmp_path / "out.json"
    result = evalh("run", "-c", str(providers), str(tests), "-o", str(report), "--no-table")
    assert result.exit_code == 0, clean(result)
    data = json.loads(report.read_text(encoding="utf-8"))
    assert [row["response"]["output"] for row in data["results"]["results"]] == ["Hi Zed"]
    assert data["config"]["description"] == "models, cases"
    write(tests, "tests:\n  - vars: {name: Zed}\n    assert: [{type: equals, vlaue: x}]\n")
    broken = evalh("validate", "-c", str(providers), "-c", str(tests))
    assert broken.exit_code == 2
    assert "cases/tests.yaml:3:14 tests[0].assert[0]" in clean(broken)  # located in the file that wrote it


def test_env_files_load_as_data_and_secrets_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALH_T_TITLE", raising=False)
    monkeypatch.delenv("EVALH_T_API_KEY", raising=False)
    write(
        tmp_path / ".env",
        "# defaults\nexport EVALH_T_TITLE='{{ 7*7 }}'\nEVALH_T_API_KEY=sk-dotenv-123456 # key\n",
    )
    config = write(
        tmp_path / "c.yaml",
        'prompts: ["[{{ env.EVALH_T_TITLE }}] {{ env.EVALH_T_API_KEY }}"]\nproviders: [echo]\n',
    )
    report = tmp_path / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table")
    assert result.exit_code == 0, clean(result)
    text = report.read_text(encoding="utf-8")
    assert "[{{ 7*7 }}] [REDACTED]" in rows_of(report)[0]["response"]["output"]  # data, never rendered
    assert "sk-dotenv-123456" not in text
    assert "EVALH_T_TITLE" not in os.environ  # the run's environment only
    write(tmp_path / "other.env", 'EVALH_T_TITLE="from\\nfile"\n')
    result = evalh("run", str(config), "-o", str(report), "--env-file", str(tmp_path / "other.env"))
    assert rows_of(report)[0]["response"]["output"].startswith("[from\nfile] ")  # .env not loaded then
    missing = evalh("run", str(config), "--env-file", "nope.env")
    assert missing.exit_code == 2 and "env file not found: nope.env" in clean(missing)


@pytest.mark.parametrize(
    ("flags", "rows", "tests"),
    [
        (["-n", "2"], 8, {"alpha", "beta"}),
        (["--filter-metadata", "area=bill"], 4, {"alpha"}),
        (["--filter-metadata", "tags=smoke", "--filter-metadata", "area=billing"], 4, {"alpha"}),
        (["--filter-providers", "^second$"], 6, {"alpha", "beta", "gamma"}),
        (["--filter-targets", "sec"], 6, {"alpha", "beta", "gamma"}),
        (["--filter-prompts", "farewell"], 6, {"alpha", "beta", "gamma"}),
    ],
)
def test_filters(tmp_path: Path, flags: list[str], rows: int, tests: set[str]) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    report = tmp_path / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table", *flags)
    assert result.exit_code == 0, clean(result)
    found = rows_of(report)
    assert len(found) == rows and {row["description"] for row in found} == tests


def test_filter_sample_keeps_n_tests(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    report = tmp_path / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table", "--filter-sample", "2")
    assert result.exit_code == 0, clean(result)
    assert len({row["description"] for row in rows_of(report)}) == 2


@pytest.mark.parametrize(
    ("flags", "flag"),
    [
        (["--filter-metadata", "area=nowhere"], "--filter-metadata"),
        (["--filter-providers", "openai"], "--filter-providers"),
        (["--filter-prompts", "^nope"], "--filter-prompts"),
        (["--filter-metadata", "area"], "--filter-metadata"),
    ],
)
def test_a_filter_that_selects_nothing_is_exit_2_naming_it(
    tmp_path: Path, flags: list[str], flag: str
) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    result = evalh("run", str(config), "--no-table", *flags)
    assert result.exit_code == 2
    assert flag in clean(result)


def _previous_report(path: Path) -> Path:
    rows = [
        {"description": "alpha", "vars": {"name": "Ada"}, "success": False, "failureReason": 2},
        {"description": "beta", "vars": {"name": "Bob"}, "success": False, "failureReason": 1},
        {"description": "gamma", "vars": {"name": "Cy"}, "success": True, "failureReason": 0},
    ]
    path.write_text(json.dumps({"results": {"results": rows}}), encoding="utf-8")
    return path


def test_filter_errors_only_and_retry_errors_rerun_the_errored_tests(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", SUITE)
    previous = _previous_report(tmp_path / "previous.json")
    report = tmp_path / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table", "--filter-errors-only", str(previous))
    assert result.exit_code == 0, clean(result)
    assert {row["description"] for row in rows_of(report)} == {"alpha"}
    assert "--filter-errors-only" in result.stderr and "1 errored test(s)" in result.stderr
    # --retry-errors reads the report this run names and rewrites it with the re-run rows merged in
    result = evalh("run", str(config), "-o", str(previous), "--no-table", "--retry-errors")
    assert result.exit_code == 1, clean(result)  # beta's earlier failure stands
    merged = {row["description"]: row["failureReason"] for row in rows_of(previous)}
    assert merged == {"alpha": 0, "beta": 1, "gamma": 0}
    again = evalh("run", str(config), "-o", str(previous), "--no-table", "--retry-errors")
    assert again.exit_code == 2 and "none of its 3 rows errored" in clean(again)
    alone = evalh("run", str(config), "--retry-errors")
    assert alone.exit_code == 2 and "--retry-errors" in clean(alone)


PROVIDER = """
import time
def call_api(prompt, options, context):
    with open({log!r}, "a") as log:
        log.write("start\\n")
    time.sleep(0.05)
    with open({log!r}, "a") as log:
        log.write("end\\n")
    return {{"output": prompt}}
"""


def test_delay_runs_one_call_at_a_time(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    write(tmp_path / "slow.py", PROVIDER.format(log=str(log)))
    tests = "\n".join(f"  - vars: {{n: {i}}}" for i in range(4))
    config = write(
        tmp_path / "c.yaml", f"prompts: ['{{{{n}}}}']\nproviders: [python:slow.py]\ntests:\n{tests}\n"
    )
    result = evalh("run", str(config), "-j", "4", "--delay", "1", "--no-table", "--no-cache")
    assert result.exit_code == 0, clean(result)
    assert log.read_text(encoding="utf-8").split() == ["start", "end"] * 4  # never two calls at once


def test_description_cell_length_and_no_write(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", SUITE.replace("description: gamma", "description: gamma-" + "x" * 50))
    report = tmp_path / "out.json"
    result = evalh(
        "run",
        str(config),
        "-o",
        str(report),
        "--description",
        "nightly",
        "--table-cell-max-length",
        "12",
        "--no-write",
        "--filter-pattern",
        "gamma",
    )
    assert result.exit_code == 0, clean(result)
    assert json.loads(report.read_text(encoding="utf-8"))["config"]["description"] == "nightly"
    assert "gamma-xxx" in result.stdout and "gamma-" + "x" * 20 not in result.stdout
    assert "Do not record this run in the run store" in " ".join(evalh("run", "--help").stdout.split())
    assert not (Path(os.environ["EVALH_HOME"]) / "runs.sqlite3").exists()
