"""The Python API (evalh.evaluate / aevaluate / check) through real runs of the echo provider."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import evalh
from evalh.errors import ConfigError, SchemaError
from evalh.store import open_store, store_path

ECHO: dict[str, Any] = {
    "prompts": ["Hi {{name}}, {{topic}}"],
    "providers": ["echo"],
    "tests": [
        {
            "description": "alpha",
            "vars": {"topic": "cats"},
            "assert": [{"type": "equals", "value": "Hi Ada, cats"}],
        },
        {
            "description": "beta",
            "vars": {"topic": "dogs"},
            "assert": [{"type": "contains", "value": "birds"}],
        },
    ],
}


def test_public_names_are_listed_in_all_and_each_resolves() -> None:
    # as httpx does: __all__ is the public surface, and every name in it is really there
    public = sorted(name for name in evalh.__all__ if not name.startswith("_"))
    assert public == sorted(name for name in dir(evalh) if not name.startswith("_"))
    for name in evalh.__all__:
        assert getattr(evalh, name) is not None, name
    assert evalh.errors.EvalhError is evalh.EvalhError
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evalh.nope  # noqa: B018


def test_the_package_is_typed() -> None:
    assert (Path(evalh.__file__).parent / "py.typed").is_file()


def test_import_evalh_imports_nothing_heavy() -> None:
    heavy = ["numpy", "onnxruntime", "httpx", "jinja2", "jsonschema", "yaml", "rich"]
    code = f"import sys, evalh; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_evaluate_a_mapping_with_the_clis_options(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = evalh.evaluate(ECHO, vars={"name": "Ada"}, outputs=[report])
    assert [row.output for row in result.rows] == ["Hi Ada, cats", "Hi Ada, dogs"]
    assert (result.successes, result.failures, result.errors) == (1, 1, 0)
    assert not result.ok
    assert [(row.test.description, graded.passed) for row, graded in result.assertion_results()] == [
        ("alpha", True),
        ("beta", False),
    ]
    assert result.stats()["successes"] == 1
    written = json.loads(report.read_text(encoding="utf-8"))
    as_dict = result.to_dict()
    assert as_dict["results"]["stats"]["failures"] == written["results"]["stats"]["failures"] == 1
    assert [row["response"]["output"] for row in as_dict["results"]["results"]] == [
        "Hi Ada, cats",
        "Hi Ada, dogs",
    ]
    filtered = evalh.evaluate(ECHO, vars={"name": "Ada"}, filter_pattern="^alp", repeat=2)
    assert [row.test.description for row in filtered.rows] == ["alpha", "alpha"]
    assert filtered.ok


def test_a_mapping_is_not_changed_and_its_relative_paths_resolve_from_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "prompt.txt").write_text("From a file: {{topic}}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = {"prompts": ["file://prompt.txt"], "providers": ["echo"], "tests": [{"vars": {"topic": "x"}}]}
    before = json.dumps(config)
    result = evalh.evaluate(config)
    assert [row.output for row in result.rows] == ["From a file: x"]
    assert json.dumps(config) == before


def test_a_bad_mapping_raises_every_problem_located_by_key_path() -> None:
    config = {
        "providers": ["echo"],
        "prompts": ["x"],
        "tests": [{"assert": [{"type": "contans", "value": "a"}]}, {"assert": [{"type": "equals"}]}],
    }
    with pytest.raises(ConfigError) as caught:
        evalh.evaluate(config)
    text = caught.value.render()
    assert isinstance(caught.value, SchemaError)
    assert (
        "<config> tests[0].assert[0].type: unknown assertion type 'contans'. Did you mean 'contains'?" in text
    )
    assert "<config> tests[1].assert[0]: missing required key 'value'" in text


def test_a_loaded_suite_and_a_path_run_too(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(
        textwrap.dedent(
            """
            prompts: ["echo {{w}}"]
            providers: [echo]
            tests: [{vars: {w: one}, assert: [{type: icontains, value: ONE}]}]
            """
        ),
        encoding="utf-8",
    )
    by_path = evalh.evaluate(str(config))
    assert by_path.ok and by_path.rows[0].output == "echo one"
    again = evalh.evaluate(by_path.run.suite)
    assert again.ok and again.rows[0].output == "echo one"


def test_evaluate_inside_a_running_event_loop() -> None:
    # Jupyter's case: the caller's loop is running in this thread
    async def in_a_loop() -> tuple[evalh.RunResult, str]:
        return evalh.evaluate(ECHO, vars={"name": "Ada"}), threading.current_thread().name

    result, thread = asyncio.run(in_a_loop())
    assert thread == threading.main_thread().name
    assert [row.output for row in result.rows] == ["Hi Ada, cats", "Hi Ada, dogs"]


def test_aevaluate_leaves_the_callers_loop_free(tmp_path: Path) -> None:
    ticks: list[int] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(1)
            await asyncio.sleep(0)

    async def main() -> evalh.RunResult:
        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        result = await evalh.aevaluate(ECHO, vars={"name": "Ada"})
        stop.set()
        await ticking
        return result

    result = asyncio.run(main())
    assert result.successes == 1
    assert ticks  # the loop ran other tasks while the evaluation ran


def test_write_records_the_run_in_the_store_and_the_default_does_not() -> None:
    evalh.evaluate(ECHO, vars={"name": "Ada"})  # conftest gives each test its own $EVALH_HOME
    assert not store_path().exists()
    evalh.evaluate(ECHO, vars={"name": "Ada"}, write=True)
    with open_store() as store:
        assert [run.failed for run in store.list_runs()] == [1]


def test_to_dict_carries_the_evalid_of_the_store_and_of_the_reports(tmp_path: Path) -> None:
    recorded = evalh.evaluate(ECHO, vars={"name": "Ada"}, write=True, outputs=[tmp_path / "a.json"])
    with open_store() as store:
        (stored,) = store.list_runs()
    assert recorded.eval_id == stored.id
    written = json.loads((tmp_path / "a.json").read_text())["evalId"]
    assert recorded.to_dict()["evalId"] == stored.id == written
    # not recorded: still one id, the one the run's reports carry, the same at every call
    unrecorded = evalh.evaluate(ECHO, vars={"name": "Ada"}, outputs=[tmp_path / "b.json"])
    again = json.loads((tmp_path / "b.json").read_text())["evalId"]
    assert unrecorded.to_dict()["evalId"] == unrecorded.to_dict()["evalId"] == again == unrecorded.eval_id
    assert again != stored.id


def test_baseline_compares_the_run_and_the_summary_shows_it(tmp_path: Path) -> None:
    evalh.evaluate(ECHO, vars={"name": "Ada"}, outputs=[tmp_path / "base.json"])
    changed = {**ECHO, "tests": [{**ECHO["tests"][0], "vars": {"topic": "dogs"}}, *ECHO["tests"][1:]]}
    later = evalh.evaluate(
        changed, vars={"name": "Ada"}, baseline=str(tmp_path / "base.json"), outputs=[tmp_path / "s.md"]
    )
    assert isinstance(later.comparison, evalh.Comparison)
    assert later.comparison.baseline.id == json.loads((tmp_path / "base.json").read_text())["evalId"]
    assert [change.test for change in later.comparison.new_failures] == ["alpha"]
    assert [change.test for change in later.comparison.removed] == ["alpha"]
    assert "### New tests that fail (1)" in (tmp_path / "s.md").read_text(encoding="utf-8")
    assert later.to_markdown() == (tmp_path / "s.md").read_text(encoding="utf-8")
    assert evalh.evaluate(ECHO, vars={"name": "Ada"}).comparison is None
    with pytest.raises(evalh.ConfigError, match="latest~9"):
        evalh.evaluate(ECHO, baseline="latest~9")


def test_check_returns_the_row_or_raises_a_readable_assertion_error() -> None:
    row = evalh.check("The capital of France is Paris.", [{"type": "icontains", "value": "paris"}])
    assert row.passed and row.assertions[0].spec.type == "icontains"
    with pytest.raises(AssertionError) as caught:
        evalh.check("no", [{"type": "contains", "value": "yes"}, {"type": "equals", "value": "no"}])
    text = str(caught.value)
    assert "[FAIL] contains" in text and "[PASS] equals" in text and "output: no" in text
    assert isinstance(caught.value, evalh.CheckFailed) and not caught.value.row.passed


def test_check_validates_its_assertions() -> None:
    with pytest.raises(ConfigError, match=r"tests\[0\]\.assert\[0\]"):
        evalh.check("x", [{"type": "no-such-type"}])
