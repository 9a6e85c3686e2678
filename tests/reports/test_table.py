"""The console summary, captured as a non-terminal stream (plain text, ASCII boxes)."""

from __future__ import annotations

import dataclasses
import io

import pytest

from evalh.model import Aggregates, RunResult, Status
from evalh.reports import table
from evalh.reports.table import print_summary, progress
from tests.reports.sample import large_run, sample_run, with_results


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide enough that no cell wraps, so lines can be compared whole."""
    monkeypatch.setenv("COLUMNS", "300")


def _printed(run: RunResult, **kwargs: object) -> str:
    buffer = io.StringIO()
    print_summary(run, console_file=buffer, **kwargs)  # type: ignore[arg-type]
    return buffer.getvalue()


def _line_with(text: str, needle: str, *, after: str = "") -> str:
    text = text[text.index(after) :] if after else text
    return next(line for line in text.splitlines() if needle in line)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_summary_figures() -> None:
    text = _printed(dataclasses.replace(sample_run(), aggregates=Aggregates()))
    assert _line_with(text, "Tests").split() == ["Tests", "12"]
    assert _line_with(text, "Passed").split() == ["Passed", "5"]
    assert _line_with(text, "Failed").split() == ["Failed", "5"]
    assert _line_with(text, "Errors").split() == ["Errors", "2"]
    assert _line_with(text, "Pass rate").split() == ["Pass", "rate", "41.67%"]
    assert _line_with(text, "Duration").split() == ["Duration", "4.32", "s"]
    # accuracy is on 4 rows: (0.955 + 0.71) * 2 / 4
    assert _line_with(text, "Mean accuracy").split() == ["Mean", "accuracy", "0.833"]


def test_provider_usage_table() -> None:
    text = _printed(sample_run())
    assert "Provider usage" in text
    assert _cells(_line_with(text, "local:minilm")) == ["local:minilm", "2", "8", "48", "4", "$0.0000"]
    line = _line_with(text, "| openai:chat", after="Provider usage")
    assert _cells(line) == ["openai:chat:gpt-4o-mini", "5", "0", "100", "0", "$0.0010"]


def test_results_table_rows() -> None:
    text = _printed(sample_run())
    assert "Results" in text
    rows = [
        line for line in text.splitlines() if line.startswith("| ") and ("PASS" in line or "FAIL" in line)
    ]
    rows += [line for line in text.splitlines() if line.startswith("| ") and "ERROR" in line]
    assert len(rows) == 12
    assert _cells(rows[0]) == ["1", "greets Ada", "echo", "greet", "PASS", "0.96", ""]
    failing = _line_with(text, "Similarity 0.42")
    assert "FAIL" in failing and "0.71" in failing
    assert "HTTP 500" in text and "name=Bob" in text


def test_plain_text_without_colour_or_box_drawing() -> None:
    text = _printed(sample_run())
    assert "\x1b" not in text
    assert all(ord(ch) < 0x2500 or ord(ch) > 0x257F for ch in text)  # no box-drawing characters
    assert "\\x1b[1m<b>bold</b>" in text  # an escape sequence in a reason is shown, not sent


def test_markup_in_run_text_is_not_interpreted() -> None:
    run = sample_run()
    rows = list(run.results)
    rows[1] = dataclasses.replace(rows[1], reason="[bold red]not markup[/] and [link=x]y[/link]")
    text = _printed(with_results(run, rows))
    assert "[bold red]not markup[/] and [link=x]y[/link]" in text


def test_no_table_keeps_the_summary() -> None:
    text = _printed(sample_run(), show_table=False)
    assert "Results" not in text and "greets Ada" not in text
    assert _line_with(text, "Tests").split() == ["Tests", "12"]


def test_big_runs_are_truncated() -> None:
    run = large_run(120, 2)
    text = _printed(run, max_rows=10)
    assert "... and 110 more" in text
    assert "case 9" in text and "case 10" not in text
    assert _line_with(text, "Failed").split() == ["Failed", str(run.count(Status.FAIL))]
    assert "and 0 more" not in _printed(large_run(5, 1), max_rows=10)
    everything = _printed(run, max_rows=0)
    assert "more" not in everything and "case 119" in everything


def test_default_width_off_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS")
    lines = _printed(sample_run(), verbose=True).splitlines()
    assert max(len(line) for line in lines) == 120


def test_wide_cells_are_truncated() -> None:
    run = sample_run()
    rows = list(run.results)
    rows[1] = dataclasses.replace(rows[1], reason="x" * 500)
    text = _printed(with_results(run, rows))
    assert "x" * 99 + "…" in text.replace("\n", "").replace("|", "").replace(" ", "")
    assert "x" * 101 not in text.replace("\n", "").replace("|", "").replace(" ", "")


def test_verbose_lists_failed_assertions() -> None:
    run = sample_run()
    text = _printed(run, verbose=True)
    assert "- similar: Similarity 0.42 is less than threshold 0.8" in text
    assert "- not-regex: Output matches regex" in text
    quiet = _printed(run)
    assert "- similar:" not in quiet


def test_aggregates_section() -> None:
    text = _printed(sample_run())
    assert "Aggregates" in text
    assert _line_with(text, "Mean score", after="Aggregates").split() == ["Mean", "score", "0.758"]
    assert "Mean accuracy" not in text  # the named-metric table replaces the summary's means
    assert _cells(_line_with(text, "| accuracy", after="Named scores")) == [
        "accuracy",
        "0.833",
        "0.710",
        "0.955",
        "4",
    ]
    assert _cells(_line_with(text, "| Type", after="Assertion types"))[:3] == ["Type", "Count", "Passed"]
    assert _cells(_line_with(text, "| python", after="Assertion types")) == [
        "python",
        "4",
        "3",
        "1",
        "75.00%",
        "1.000",
    ]
    side = _cells(_line_with(text, "| gpt ", after="Side by side"))
    assert side == ["gpt", "greet", "3", "2", "1", "0", "66.67%", "0.735", "accuracy=0.955", "1.000", "1.000"]
    assert _cells(_line_with(text, "| echo ", after="Classification")) == [
        "echo",
        "greet",
        "1",
        "1.000",
        "1.000",
        "0",
    ]
    assert "Per class" not in text
    assert "Per class: [gpt] chat" in _printed(sample_run(), verbose=True)
    assert "Aggregates" not in _printed(dataclasses.replace(sample_run(), aggregates=Aggregates()))


def test_aggregates_single_column_and_unknown_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # the console shows whatever figures the report's form of the aggregates carries, future ones too
    aggregates = {
        "passRate": 50.0,
        "columns": [{"provider": "echo", "prompt": "p", "rows": 2}],
        "futureFigure": 0.25,
        "futureMap": {"[red]x[/red]": {"score": 1}},
    }
    monkeypatch.setattr(table, "aggregates_to_json", lambda _aggregates: aggregates)
    text = _printed(sample_run(), show_table=False)
    assert "Side by side" not in text  # one column only
    assert _line_with(text, "futureFigure").split() == ["futureFigure", "0.250"]
    assert _cells(_line_with(text, "[red]x[/red]")) == ["[red]x[/red]", "1"]


def test_interrupted_run_is_flagged() -> None:
    text = _printed(dataclasses.replace(sample_run(), interrupted=True))
    assert "Interrupted" in _line_with(text, "Interrupted")


def test_progress_is_a_no_op_off_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with progress(10_000) as advance:
        for _ in range(100):
            advance(1)
    with progress(3) as advance:
        advance(3)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_progress_draws_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    with progress(200) as advance:
        advance(150)
    assert "150/200" in capsys.readouterr().err
