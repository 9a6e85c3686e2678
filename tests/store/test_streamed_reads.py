"""Stored runs read as they are written out: ``evalh runs show --json`` prints exactly the JSON report
``load_run`` gives, ``evalh diff`` of stored runs is the comparison of their reports, and neither
holds a run's rows at once (tracemalloc's peak stays far below the rows' stored text)."""

from __future__ import annotations

import contextlib
import json
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalh.cli.diff import diff
from evalh.cli.runs import show
from evalh.reports.html import _inline_json, html_chunks
from evalh.reports.streamed import EncodedConfig
from evalh.reports.viewdata import run_view
from evalh.reports.yamltext import to_yaml_chunks, to_yaml_text
from evalh.store import open_store
from evalh.store.compare import compare_reports
from evalh.store.export import JSONItems, JSONText, indented_report
from tests.store.helpers import evalh

_TEXT = '{"description": "d", "tests": [{"vars": {"a": "ü\\n"}}, 2, []], "e": [], "f": {}, "g": [[1, 2]]}'


def _plain(value: Any) -> Any:
    if isinstance(value, JSONText):
        return json.loads(value.text)
    if isinstance(value, JSONItems):
        return [_plain(item) for item in value.items]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


@pytest.mark.parametrize(
    "document",
    [
        {"a": 1, "results": {"x": [], "results": [{"q": "é\n", "l": [1, {"z": []}]}, {}]}, "config": _TEXT},
        {"results": {"results": []}, "config": "{}"},
        {"results": {"results": []}, "config": "[1, 2]"},
        {"results": {"results": [1]}, "config": ' { "t" : [ 1 , [ ] ] , "u" : null } '},
        {"config": '"s"', "results": {"results": [{"a": [1, 2]}]}, "z": {"y": [None]}},
    ],
)
def test_indented_report_is_json_dumps_of_the_whole(document: dict[str, Any]) -> None:
    lazy = {**document, "config": JSONText(document["config"])}
    lazy["results"] = {**document["results"], "results": JSONItems(iter(document["results"]["results"]))}
    expected = json.dumps(_plain({**lazy, "results": document["results"]}), indent=2, ensure_ascii=False)
    assert "".join(indented_report(lazy)) == expected


def _run(config: Path, *extra: str) -> None:
    result = evalh("run", config, "--no-cache", "--no-table", "--no-progress-bar", *extra)
    assert result.exit_code in (0, 1), result.output


def _suite(directory: Path, tests: int, *, width: int = 40) -> Path:
    """Tests through the echo provider, each with a var of about ``width`` characters; test i fails
    when i is a multiple of 3 (``flip``: of 4 instead, for a second run that differs)."""
    rows = [
        {
            "description": f"t{i} ✓",
            "vars": {"n": str(i), "text": f"{i} " + "wörd " * (width // 5)},
            "assert": [
                {"type": "icontains", "value": "{{ n }}"},
                {"type": "javascript", "value": f"{i} % 3 != 0"},
            ],
        }
        for i in range(tests)
    ]
    path = directory / "suite.yaml"
    config = {"description": "stream ✓", "prompts": ["Say {{ n }}: {{ text }}"], "providers": ["echo"]}
    path.write_text(json.dumps({**config, "tests": rows}), encoding="utf-8")
    return path


def test_show_json_prints_the_whole_report(tmp_path: Path) -> None:
    _run(_suite(tmp_path, 5))
    with open_store() as store:
        expected = json.dumps(store.load_run("latest"), indent=2, ensure_ascii=False) + "\n"
    shown = evalh("runs", "show", "--json", "latest")
    assert shown.exit_code == 0 and shown.stdout == expected


def test_show_json_of_a_run_without_rows(tmp_path: Path) -> None:
    header = {"evalId": "eval-empty", "results": {"version": 3, "timestamp": "now", "results": []}}
    with open_store() as store:
        recorder = store.start(
            "eval-empty",
            header,
            config=EncodedConfig.of_text('{"tests": []}'),
            config_path=None,
            description=None,
        )
        recorder.finish(header, interrupted=False)
        expected = json.dumps(store.load_run("eval-empty"), indent=2, ensure_ascii=False) + "\n"
    assert '"results": []' in expected and '"tests": []' in expected
    assert evalh("runs", "show", "--json", "eval-empty").stdout == expected


def test_diff_of_stored_runs_is_the_diff_of_their_reports(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 12)
    _run(suite)
    suite.write_text(suite.read_text(encoding="utf-8").replace("% 3", "% 4"), encoding="utf-8")
    _run(suite)
    with open_store() as store:
        expected = compare_reports(store.load_run("latest~1"), store.load_run("latest")).to_json()
    shown = evalh("diff", "latest~1", "latest", "--json")
    assert shown.exit_code == 1 and json.loads(shown.stdout) == expected
    assert expected["regressions"] and expected["fixes"]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """stdout to the null device: what is printed is not held in memory."""
    with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        yield


def _peak(call: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        with _quiet(), contextlib.suppress(SystemExit, Exception):  # diff exits 1 (typer.Exit)
            call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_show_and_diff_hold_no_run_whole(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 1500, width=1000)
    _run(suite)
    _run(suite)
    with open_store() as store:
        whole = _peak(lambda: store.load_run("latest"))  # the run as one report: its rows as dicts
    assert whole > 10_000_000
    show_peak, diff_peak = (
        _peak(lambda: show("latest", as_json=True)),
        _peak(lambda: diff("latest~1", "latest")),
    )
    print(f"peaks: whole run {whole:,}, show --json {show_peak:,}, diff {diff_peak:,}")
    assert show_peak < whole / 2 and diff_peak < whole / 2


@pytest.mark.parametrize("rows", [[], [{"a": 1, "b": [1, {"c": "ü: x"}]}, "s", [], {}], [{"results": "x"}]])
def test_yaml_in_pieces_is_the_whole_yaml(rows: list[Any]) -> None:
    document = {
        "evalId": "e",
        "results": {"version": 3, "results": None, "stats": {"x": 1}},
        "config": {"t": [1]},
    }
    whole = to_yaml_text({**document, "results": {**document["results"], "results": rows}})
    assert "".join(to_yaml_chunks(document, iter(rows))) == whole


def test_html_in_pieces_inlines_the_whole_view(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 4)
    suite.write_text(suite.read_text(encoding="utf-8").replace("wörd", "</script><wörd"), encoding="utf-8")
    _run(suite)
    with open_store() as store:
        report = store.load_run("latest")
    view = run_view(report, str(report["evalId"]))
    data = f'<script type="application/json" id="evalh-data">{_inline_json({"view": view})}</script>\n'
    rows = report["results"]["results"]
    page = "".join(html_chunks({**report, "results": {**report["results"], "results": iter(rows)}}))
    assert data in page and page.count("</script>") == 2 and "<wörd" not in page
