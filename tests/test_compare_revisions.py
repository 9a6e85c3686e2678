"""benchmarks/compare_revisions.py: two runs of the SAME code must compare equal (so the script exits 0 for a
refactor that changes nothing), while any real change of a report still shows. The traced example agent is
run twice for real (its span ids are random per run); the masks are checked on the texts evalh writes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
AGENT = ROOT / "examples" / "configs" / "agent.yaml"
REPORTS = ("report.json", "report.jsonl", "report.yaml", "report.html")


@pytest.fixture(scope="module")
def script() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its neighbours, as when run from benchmarks/
    try:
        spec = importlib.util.spec_from_file_location(
            "compare_revisions", BENCHMARKS / "compare_revisions.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


def run_agent(out: Path) -> None:
    out.mkdir()
    command = [sys.executable, "-m", "evalh", "run", str(AGENT), "--no-write", "--no-cache"]
    command += ["-o", *(str(out / report) for report in REPORTS)]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("EVALH_", "OTEL_"))}
    env |= {"EVALH_HOME": str(out / "home"), "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=AGENT.parent, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def two_agent_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    first, second = tmp_path_factory.mktemp("first") / "out", tmp_path_factory.mktemp("second") / "out"
    run_agent(first)
    run_agent(second)
    return first, second


@pytest.mark.parametrize("report", REPORTS)
def test_two_runs_of_the_traced_agent_compare_equal(
    script: ModuleType, two_agent_runs: tuple[Path, Path], report: str
) -> None:
    first, second = ((folder / report).read_text() for folder in two_agent_runs)
    assert '"spanId"' in first or "spanId:" in first  # the rows carry their spans' ids...
    assert first != second  # ...which differ between the runs
    assert script.comparable(report, first) == script.comparable(report, second)


def test_a_changed_verdict_in_the_agent_report_still_differs(
    script: ModuleType, two_agent_runs: tuple[Path, Path]
) -> None:
    text = (two_agent_runs[0] / "report.json").read_text()
    document = json.loads(text)
    document["results"]["results"][0]["success"] = not document["results"]["results"][0]["success"]
    assert script.comparable("report.json", json.dumps(document)) != script.comparable("report.json", text)


def test_a_durations_padding_in_the_console_table_is_masked(script: ModuleType) -> None:
    # the calibration summary pads its values to one column: 12.66 s and 4.93 s take different widths
    long, short = "Duration           12.66 s\nRows    10\n", "Duration            4.93 s\nRows    10\n"
    assert script.comparable("stdout.txt", long) == script.comparable("stdout.txt", short)
    assert script.comparable("stdout.txt", long) != script.comparable("stdout.txt", long.replace("10", "11"))


def test_a_numbers_sixteen_decimals_are_not_taken_for_a_span_id(script: ModuleType) -> None:
    def row(score: float) -> str:
        return json.dumps({"testIdx": 0, "score": score, "spanId": "1bed79887f1ff23d"})

    assert script.comparable("report.json", row(0.1234567890123456)) != script.comparable(
        "report.json", row(0.1234567890123457)
    )
    other_span = row(0.5).replace("1bed79887f1ff23d", "cc90383505c04960")
    assert script.comparable("report.json", row(0.5)) == script.comparable("report.json", other_span)


def test_json_lines_rows_compare_in_the_order_of_their_identity(script: ModuleType) -> None:
    rows = [
        {"testIdx": test, "promptIdx": prompt, "provider": {"id": "echo"}, "success": test % 2 == 0}
        for test in range(12)
        for prompt in range(2)
    ]
    in_order = "\n".join(json.dumps(row) for row in rows)
    finished = "\n".join(json.dumps(row) for row in [*rows[7:], *reversed(rows[:7])])
    assert script.comparable("r.jsonl", in_order) == script.comparable("r.jsonl", finished)
    rows[3]["success"] = not rows[3]["success"]
    changed = "\n".join(json.dumps(row) for row in rows)
    assert script.comparable("r.jsonl", in_order) != script.comparable("r.jsonl", changed)
