"""The console summary, captured as a non-terminal stream (plain text, ASCII boxes)."""

from __future__ import annotations

import dataclasses
import io

import pytest

from evalh.model import Aggregates, RunRecord, Status
from evalh.reports import table
from evalh.reports.codec import result_to_json
from evalh.reports.matrix import matrix_of_report
from evalh.reports.table import print_summary, progress
from tests.reports.sample import large_run, sample_run, with_results


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide enough that no cell wraps, so lines can be compared whole."""
    monkeypatch.setenv("COLUMNS", "300")


def _printed(run: RunRecord, **kwargs: object) -> str:
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
    assert _line_with(text, "Pass rate").split() == ["Pass", "rate", "41.67%", "[0-100%]"]
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
    """promptfoo's matrix: a row per test (description, vars), a column per prompt x provider."""
    text = _printed(sample_run())
    assert "Results" in text
    header = _cells(_line_with(text, "| #"))
    assert header == [
        "#",
        "Test",
        "name",
        "extra",
        "[echo] greet",
        "[gpt] greet",
        "[echo] chat",
        "[gpt] chat",
    ]
    first = _line_with(text, "| 1 ")
    assert _cells(first) == ["1", "greets Ada", "Ada", "", "PASS 0.96", "PASS 0.96", "FAIL 0.71", "FAIL 0.71"]
    outputs = _cells(_line_with(text, "Hello Ada!"))
    assert outputs[4:] == ["Hello Ada!", "Hello Ada!", "Greetings, human.", "Greetings, human."]
    reasons = _cells(_line_with(text, "- similar:"))  # the failing reason beneath the output
    assert reasons[4:] == ["", "", *["- similar: Similarity 0.42 is less than threshold 0.8"] * 2]
    assert _cells(_line_with(text, "| 2 "))[2:] == [
        "Bob",
        '{"k": [1, 2]}',
        "PASS 1.00",
        "PASS 0.75",
        "PASS 1.00",
        "ERROR 0.00",
    ]
    assert "HTTP 500 server error" in text
    assert len([line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]) == 3


def test_plain_text_without_colour_or_box_drawing() -> None:
    text = _printed(sample_run())
    assert "\x1b" not in text
    assert all(ord(ch) < 0x2500 or ord(ch) > 0x257F for ch in text)  # no box-drawing characters
    assert "\\x1b[1m<b>bold</b>" in text  # an escape sequence in a reason is shown, not sent


def test_markup_in_run_text_is_not_interpreted() -> None:
    run = sample_run()
    rows = list(run.results)
    rows[0] = dataclasses.replace(rows[0], output="[bold red]not markup[/] and [link=x]y[/link]")
    text = _printed(with_results(run, rows))
    assert "[bold red]not markup[/] and [link=x]y[/link]" in text


def test_no_table_keeps_the_summary() -> None:
    text = _printed(sample_run(), show_table=False)
    assert "Results" not in text and "greets Ada" not in text
    assert _line_with(text, "Tests").split() == ["Tests", "12"]


def test_big_runs_are_cut_with_failing_tests_first() -> None:
    run = large_run(120, 2)  # tests 0, 7, 14, ... 119 fail
    text = _printed(run, max_rows=10)
    shown = [
        int(cell)
        for line in text.splitlines()
        if line.startswith("| ") and (cell := _cells(line)[0]).isdigit()
    ]
    assert shown == [i + 1 for i in range(0, 70, 7)]  # the first ten failing tests, in order
    assert "... and 110 more tests not shown, 8 of them failing. Tests with failures are shown first." in text
    assert _line_with(text, "Failed").split() == ["Failed", str(run.count(Status.FAIL))]
    small = _printed(large_run(5, 1), max_rows=10)
    assert "more tests" not in small
    assert [
        _cells(line)[0] for line in small.splitlines() if line.startswith("| ") and _cells(line)[0].isdigit()
    ] == ["1", "2", "3", "4", "5"]
    everything = _printed(run, max_rows=0)
    assert "more tests" not in everything and "case 119" in everything


def test_nothing_wraps_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped, each cell line stays whole, so grep finds every word (COLUMNS unset)."""
    monkeypatch.delenv("COLUMNS")
    run = sample_run()
    rows = list(run.results)
    long_word = "supercalifragilistic" * 6
    rows[0] = dataclasses.replace(rows[0], output=f"{long_word} and the rest of a long answer " * 3)
    text = _printed(with_results(run, rows), verbose=True)
    assert long_word in text
    assert "openai:chat:gpt-4o-mini: HTTP 500 server error after 5 attempts" in text
    assert max(len(line) for line in text.splitlines()) > 120


def test_cells_are_cut_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS")
    run = sample_run()
    rows = list(run.results)
    rows[0] = dataclasses.replace(rows[0], output="x" * 500)
    squeezed = _printed(with_results(run, rows)).replace(" ", "")
    assert "x" * 249 + "…" in squeezed and "x" * 250 not in squeezed  # promptfoo's 250 when piped
    limited = _printed(with_results(run, rows), cell_limit=20).replace(" ", "")
    assert "x" * 19 + "…" in limited and "x" * 20 not in limited


def test_verbose_shows_whole_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS")
    run = sample_run()
    rows = list(run.results)
    graded = rows[1].assertions
    long_reason = "because " * 80
    rows[1] = dataclasses.replace(
        rows[1], assertions=(graded[0], dataclasses.replace(graded[1], reason=long_reason))
    )
    quiet = _printed(with_results(run, rows), cell_limit=30)
    assert "- similar: because because" in quiet and long_reason.strip() not in quiet
    loud = _printed(with_results(run, rows), cell_limit=30, verbose=True)
    assert long_reason.strip() in loud


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


def test_tool_calls_read_as_name_and_arguments() -> None:
    run = sample_run()
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        },
        {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]
    rows = [dataclasses.replace(run.results[0], output=calls), *run.results[1:]]
    text = _printed(with_results(run, rows))
    assert _cells(_line_with(text, "get_weather("))[4] == 'get_weather({"city": "Paris"})'
    assert _cells(_line_with(text, "get_time("))[4] == "get_time({})"
    assert '"function"' not in text  # not the JSON blob
    # the same cell read back from a report (a stored run's matrix)
    report_rows = [result_to_json(row) for row in rows]
    cells = matrix_of_report(report_rows, 0).rows[0].cells
    assert next(iter(cells.values())).calls == ('get_weather({"city": "Paris"})', "get_time({})")
