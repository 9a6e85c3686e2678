"""What a process of ``evalh run`` / ``evalh validate`` loads: only what the config at hand needs, and
command-line values converted exactly as typer converts them (evalh/cli/convert.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer._click.core import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param
from typer.main import get_command

from evalh.assertions.registry import FAMILY_MODULES
from evalh.cli.app import app
from evalh.cli.convert import convert_lazily

DETERMINISTIC = """
    prompts: ["{{answer}}"]
    providers: [echo]
    tests:
      - vars: {answer: 'the refund was issued {"a": 1}'}
        assert:
          - {type: icontains, value: refund}
          - {type: regex, value: "ref.nd"}
          - {type: not-contains, value: error}
          - {type: equals, value: nope, weight: 2}
"""


_HEAVY = ("pydantic", "numpy", "onnxruntime", "tokenizers", "httpx")


def _modules_after(
    argv: list[str], cwd: Path, heavy: tuple[str, ...] = _HEAVY, env: dict[str, str] | None = None
) -> list[str]:
    """The modules of ``heavy`` a real ``evalh`` process has loaded when the command ends."""
    code = (
        "import sys\nfrom evalh.cli.app import main\n"
        f"sys.argv = ['evalh', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {heavy!r} if m in sys.modules], file=sys.stderr)"
    )
    environ = {**os.environ, **(env or {})}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=environ)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("["), result.stderr
    return list(eval(last))  # the list printed above, nothing else


def _plain_run(tmp_path: Path) -> tuple[Path, dict[str, str], list[str]]:
    """The DETERMINISTIC config in ``tmp_path``, a store home there, and its ``eval`` writing out.json."""
    config = tmp_path / "evalh.yaml"
    config.write_text(textwrap.dedent(DETERMINISTIC), encoding="utf-8")
    home = {"EVALH_HOME": str(tmp_path / "home")}
    run = ["eval", "-c", str(config), "-o", str(tmp_path / "out.json"), "--no-cache", "--no-progress-bar"]
    return config, home, run


def test_deterministic_run_and_validate_load_no_pydantic_numpy_or_model(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(textwrap.dedent(DETERMINISTIC), encoding="utf-8")
    run = ["run", "-c", str(config), "-o", str(tmp_path / "out.json"), "--no-write", "--no-cache"]
    assert _modules_after(run, tmp_path) == []
    assert (tmp_path / "out.json").is_file()
    assert _modules_after(["validate", str(config), "--var", "x=1"], tmp_path) == []


def test_validate_draws_no_table_so_loads_neither_rich_nor_the_report_writers(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(textwrap.dedent(DETERMINISTIC), encoding="utf-8")
    heavy = ("rich", "evalh.reports.writers")
    assert _modules_after(["validate", str(config)], tmp_path, heavy) == []
    # a config that names a report still has its path checked, as run checks it
    config.write_text(textwrap.dedent(DETERMINISTIC) + "outputPath: out.unknown\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "evalh", "validate", str(config)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    assert "out.unknown" in result.stderr


# What a recorded run of an echo-only config with a JSON report never uses: the comparison machinery
# (--baseline), the OTLP receiver's HTTP server (tracing), a browser, the other report formats.
_UNUSED_BY_A_PLAIN_RUN = (
    "evalh.store.refs",
    "evalh.store.export",  # reading a stored run back
    "getpass",  # asking who rates a row
    "evalh.store.compare",
    "evalh.stats.significance",
    "evalh.tracing.receiver",
    "http.server",
    "email.message",
    "webbrowser",
    "evalh.reports.csv",
    "evalh.reports.html",
    "evalh.reports.junit",
    "evalh.reports.markdown",
    "evalh.reports.yamltext",
    "rich.progress",  # the bar: only on a terminal
)


def test_a_recorded_run_loads_no_baseline_tracing_browser_or_other_report_formats(tmp_path: Path) -> None:
    _, home, run = _plain_run(tmp_path)
    assert _modules_after(run, tmp_path, _UNUSED_BY_A_PLAIN_RUN, home) == []
    assert (tmp_path / "out.json").is_file() and (tmp_path / "home" / "runs.sqlite3").is_file()
    # each is still there when asked for: the run against its baseline, every format written
    reports = [str(tmp_path / f"out.{suffix}") for suffix in ("csv", "html", "xml", "md", "yaml")]
    again = [*run[:3], "-o", *reports, "--no-cache", "--no-progress-bar", "--baseline", "latest"]
    loaded = set(_modules_after(again, tmp_path, _UNUSED_BY_A_PLAIN_RUN, home))
    assert {"evalh.store.refs", "evalh.store.compare", "evalh.reports.junit", "evalh.reports.html"} <= loaded
    assert all(Path(report).stat().st_size > 0 for report in reports)


def test_the_store_package_gives_each_public_name_of_its_modules() -> None:
    import evalh.store as store
    from evalh.store import database, identity, recorder, refs, runs, schema

    modules = (database, identity, recorder, refs, runs, schema)
    for name in store.__all__:
        assert any(getattr(store, name) is vars(module).get(name) for module in modules), name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        store.nope  # noqa: B018


def _params(command: str) -> dict[str, Any]:
    click_command = get_command(app).commands[command]  # type: ignore[attr-defined]
    return {param.name: param for param in click_command.params}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("config", "evalh.yaml"),
        ("config", ""),
        ("config_option", ("a.yaml", "b/c.yml")),
        ("output", ("out.json", "x.junit.xml")),
        ("env_file", (".env",)),
        ("filter_pattern", "^t[0-9]+$"),
        ("filter_failing", "/"),  # a directory that exists: typer's path checks run
        ("fail_on", "regressions"),
        ("max_concurrency", "7"),
        ("fail_under", "99.5"),
    ],
)
def test_values_convert_as_typers_own_conversion(name: str, value: Any) -> None:
    ours = convert_lazily([_params("run")[name]])[0]
    typers = _params("run")[name]
    ctx = Context(get_command(app))
    expected = build_runtime_param(typers.type_descriptor).coerce(value, param=typers, ctx=ctx)
    converted = ours.process_value(ctx, value)
    assert converted == expected and type(converted) is type(expected)


def test_a_bad_number_gets_typers_message() -> None:
    ours = convert_lazily([_params("run")["max_concurrency"]])[0]
    with pytest.raises(BadParameter, match="greater than or equal to 1"):
        ours.process_value(Context(get_command(app)), "0")


def test_options_not_given_build_no_typer_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(descriptor: object) -> None:
        raise AssertionError(f"typer's adapter built for {descriptor}")

    monkeypatch.setattr("evalh.cli.convert.build_runtime_param", refuse)
    params = convert_lazily(list(_params("run").values()))
    ctx = Context(get_command(app))
    values = {param.name: param.process_value(ctx, None) for param in params}
    assert values["max_concurrency"] is None and values["output"] == () and values["config"] is None
    assert values["output"] == () and values["config_option"] == ()
    assert _params_converted("output", ("a.json",)) == ["a.json"]


def _params_converted(name: str, value: Any) -> Any:
    param = convert_lazily([_params("run")[name]])[0]
    return param.process_value(Context(get_command(app)), value)


def test_jsonschema_loads_with_the_first_validator_not_with_the_modules(tmp_path: Path) -> None:
    """Loading a config's and a run's modules, and every assertion family, imports no jsonschema: a run
    that validates nothing (every test shape already known) never pays for it."""
    code = (
        "import sys\nimport evalh.config.load, evalh.session.run\n"
        "from evalh.assertions.registry import all_assertions\nall_assertions()\n"
        "print(sorted(m for m in ('jsonschema', 'referencing') if m in sys.modules))\n"
        "from evalh.config.schema import config_validator, schema_problems\n"
        "print(len(schema_problems({'prompts': 7}, config_validator())) > 0, 'jsonschema' in sys.modules)"
    )
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert result.stdout.split("\n")[:2] == ["[]", "True True"], result.stdout


def test_templates_of_one_variable_load_no_jinja_and_others_load_it(tmp_path: Path) -> None:
    """``{{answer}}`` prompts and values are printed without the template engine (evalh/templating); a
    template that needs Jinja still gets it, rendered as before."""
    config, home, run = _plain_run(tmp_path)
    engine = ("jinja2", "evalh.templating.engine")
    assert _modules_after(run, tmp_path, engine, home) == []
    assert _modules_after(["validate", str(config)], tmp_path, engine) == []
    config.write_text(textwrap.dedent(DETERMINISTIC).replace("{{answer}}", "{{ answer | upper }}"), "utf-8")
    assert _modules_after(run, tmp_path, engine, home) == list(engine)
    output = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert output["results"]["results"][0]["response"]["output"] == 'THE REFUND WAS ISSUED {"A": 1}'


# The runtimes of user code: a config without code (no python/javascript assertion, provider, transform,
# generator, var script, hook or filter) never loads them, nor (validate) asyncio; inline tests load no
# reader of generated or CSV tests.
_RUNTIMES = (
    "evalh.runtimes.python",
    "evalh.runtimes.python_worker",
    "evalh.runtimes.javascript",
    "evalh.runtimes.typescript",
    "evalh.runtimes.quickjs_engine",
    "evalh.runtimes.processes",
    "evalh.config.generators",
    "evalh.config.csv_tests",
)


def test_a_config_without_code_loads_no_runtime_and_validate_no_event_loop(tmp_path: Path) -> None:
    config, home, run = _plain_run(tmp_path)
    assert _modules_after(run, tmp_path, _RUNTIMES, home) == []
    assert _modules_after(["validate", str(config)], tmp_path, (*_RUNTIMES, "asyncio")) == []
    # code loads its runtime, and runs
    with_code = DETERMINISTIC + "          - {type: python, value: \"'refund' in output\"}\n"
    config.write_text(textwrap.dedent(with_code), encoding="utf-8")
    assert _modules_after(run, tmp_path, _RUNTIMES[:2], home) == list(_RUNTIMES[:2])
    output = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    components = output["results"]["results"][0]["gradingResult"]["componentResults"]
    assert [c["pass"] for c in components] == [True, True, True, False, True]


def test_a_run_imports_only_the_assertion_families_its_config_uses(tmp_path: Path) -> None:
    """The schema's assertion section and each type's family are read from the files generated from the
    registry (evalh/config/generated.py): a text-only config imports the text family alone, and a type
    of another family (in the config or in a CSV tests file) imports that family too, and is graded."""
    config, home, run = _plain_run(tmp_path)
    families = FAMILY_MODULES
    assert _modules_after(run, tmp_path, families, home) == ["evalh.assertions.text"]
    assert _modules_after(["validate", str(config)], tmp_path, families) == ["evalh.assertions.text"]
    (tmp_path / "tests.csv").write_text(
        'answer,__expected1,__expected2\n"{""a"": 1}",is-json,contains-any:x\n', encoding="utf-8"
    )
    config.write_text(
        "prompts: ['{{answer}}']\nproviders: [echo]\ntests: file://tests.csv\n"
        "defaultTest:\n  assert: [{type: rouge-n, value: 'a', threshold: 0.1}]\n",
        encoding="utf-8",
    )
    used = ["evalh.assertions.text", "evalh.assertions.structured", "evalh.assertions.lexical"]
    assert _modules_after(run, tmp_path, families, home) == used
    output = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    components = output["results"]["results"][0]["gradingResult"]["componentResults"]
    assert [(c["assertion"]["type"], c["pass"]) for c in components] == [
        ("rouge-n", True),
        ("is-json", True),
        ("contains-any", False),
    ]


def test_validate_makes_no_run_record_class_and_the_model_package_gives_every_name() -> None:
    """evalh.model imports a class's module when the class is first asked for: validate, which builds no
    run record, creates none of the aggregates' or repeats' dataclasses; every public name is the one
    its module defines."""
    code = (
        "import sys\nfrom evalh.model import Suite, TestResult\n"
        "print(sorted(m for m in sys.modules if m.startswith('evalh.model.')))\n"
        "import importlib, evalh.model as model\n"
        "wrong = [n for n in model.__all__ if getattr(model, n) is not "
        "getattr(importlib.import_module(model._HOMES[n]), n)]\n"
        "print(wrong, set(model.__all__) <= set(dir(model)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = result.stdout.splitlines()
    assert "evalh.model.aggregates" not in first and "evalh.model.results" in first
    assert second == "[] True"
    with pytest.raises(ImportError, match="cannot import name 'Nope'"):
        from evalh.model import Nope  # type: ignore[attr-defined]  # noqa: F401


def test_validate_imports_no_aggregates(tmp_path: Path) -> None:
    config, _, _ = _plain_run(tmp_path)
    heavy = ("evalh.model.aggregates", "evalh.model.repeats")
    assert _modules_after(["validate", str(config)], tmp_path, heavy) == []


def test_the_regex_package_comes_with_the_first_regular_expression(tmp_path: Path) -> None:
    config, home, run = _plain_run(tmp_path)
    assert _modules_after(run, tmp_path, ("regex",), home) == ["regex"]  # DETERMINISTIC has a regex
    output = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    components = output["results"]["results"][0]["gradingResult"]["componentResults"]
    assert [c["pass"] for c in components] == [True, True, True, False]
    config.write_text(
        "prompts: ['{{answer}}']\nproviders: [echo]\ntests:\n"
        "  - {vars: {answer: ab}, assert: [{type: contains, value: a}, {type: starts-with, value: b}]}\n",
        encoding="utf-8",
    )
    assert _modules_after(run, tmp_path, ("regex",), home) == []
    output = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    components = output["results"]["results"][0]["gradingResult"]["componentResults"]
    assert [c["pass"] for c in components] == [True, False]
    assert _modules_after(["validate", str(config)], tmp_path, ("regex",)) == []
