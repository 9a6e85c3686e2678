"""JavaScript provider files (promptfoo's custom providers) through `evalh run`, in the real engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.app import app
from evalh.runtimes.javascript_source import JsFileProblem, file_source
from tests.cli.test_cli_habits import clean, rows_of, write

CLASS_PROVIDER = """
class EchoProvider {
  constructor(options) {
    this.options = options;
  }
  id() {
    return 'echo-custom';
  }
  callApi(prompt, context, options) {
    return {
      output: JSON.stringify({prompt, vars: context.vars, label: context.prompt.label,
                              test: context.test.description, options: this.options, third: options}),
      tokenUsage: {prompt: 2, completion: 3, total: 5},
      cost: 0.25,
    };
  }
}
module.exports = EchoProvider;
"""


def _run(config: Path, *extra: str) -> tuple[Result, list[dict[str, Any]]]:
    report = config.parent / "out.json"
    result = CliRunner().invoke(app, ["run", "-c", str(config), "-o", str(report), "--no-cache", *extra])
    return result, rows_of(report) if report.exists() else []


def _config(tmp_path: Path, providers: str, files: dict[str, str], tests: str = "") -> Path:
    for name, text in files.items():
        write(tmp_path / name, text)
    return write(
        tmp_path / "promptfooconfig.yaml",
        f"""
        prompts: [{{raw: "Say {{{{word}}}}", label: say}}]
        providers: {providers}
        tests: {tests or "[{description: first, vars: {word: hi}}]"}
        """,
    )


def _rows(tmp_path: Path, providers: str, files: dict[str, str], tests: str = "") -> list[dict[str, Any]]:
    """The report's rows of a run that must succeed."""
    result, rows = _run(_config(tmp_path, providers, files, tests))
    assert result.exit_code == 0, clean(result)
    return rows


def _error(row: dict[str, Any]) -> str:
    assert row["failureReason"] == 2, row  # an ERROR row
    return " ".join(str(row["error"]).split())


def test_a_class_provider_is_built_with_promptfoos_options_and_called_per_row(tmp_path: Path) -> None:
    rows = _rows(
        tmp_path,
        "[{id: file://provider.js, label: mine, config: {temperature: 0.5}}]",
        {"provider.js": CLASS_PROVIDER},
    )
    (row,) = rows
    seen = json.loads(row["response"]["output"])
    assert seen["prompt"] == "Say hi" and seen["vars"] == {"word": "hi"}
    assert seen["label"] == "say" and seen["test"] == "first" and seen["third"] == {}
    assert seen["options"] == {
        "id": "file://provider.js",
        "config": {"temperature": 0.5, "basePath": str(tmp_path.resolve())},
        "env": {},
    }
    assert row["response"]["tokenUsage"]["total"] == 5 and row["cost"] == 0.25
    assert row["provider"] == {"id": "echo-custom", "label": "mine"}  # its id(), as promptfoo shows


@pytest.mark.parametrize(
    ("provider_id", "file", "code"),
    [
        ("./sub/provider.js", "sub/provider.js", CLASS_PROVIDER),
        ("file://provider.cjs", "provider.cjs", CLASS_PROVIDER),
        ("file://named.js:Echo", "named.js", CLASS_PROVIDER.replace("module.exports =", "exports.Echo =")),
        ("file://esm.js", "esm.js", CLASS_PROVIDER.replace("module.exports =", "exports.default =")),
    ],
)
def test_the_file_is_found_by_promptfoos_forms_of_id(
    tmp_path: Path, provider_id: str, file: str, code: str
) -> None:
    rows = _rows(
        tmp_path,
        f"[{provider_id}]",
        {file: code},
    )
    assert '"prompt":"Say hi"' in rows[0]["response"]["output"]


def test_async_methods_class_fields_and_an_object_export_are_awaited(tmp_path: Path) -> None:
    fields = """
    module.exports = class {
      id = () => 'fields';
      callApi = async (prompt) => ({output: (await Promise.resolve(prompt)).toUpperCase()});
    };
    """
    plain = "module.exports = {id: () => 'plain', callApi: async (p) => ({output: 'obj ' + p})};"
    text = "module.exports = class { async callApi(p) { return 'text ' + p; } };"
    rows = _rows(
        tmp_path,
        "[file://fields.js, file://plain.js, file://text.js]",
        {"fields.js": fields, "plain.js": plain, "text.js": text},
    )
    assert [row["response"]["output"] for row in rows] == ["SAY HI", "obj Say hi", "text Say hi"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "module.exports = class { callApi() { return {error: 'quota exceeded'}; } };",
            "quota exceeded",
        ),
        (
            "module.exports = class { async callApi() { throw new Error('upstream down'); } };",
            "p.js: callApi threw Error: upstream down",
        ),
        (
            "module.exports = class { constructor() { throw new Error('no key'); } callApi() {} };",
            "p.js: the provider could not be set up: its constructor threw Error: no key",
        ),
        ("module.exports = class { id() { return 'x'; } };", "the provider has no callApi method"),
        (
            "module.exports = async (prompt) => ({output: prompt});",
            "exports a function that cannot be built with new",
        ),
        ("module.exports = 42;", "p.js exports a number, not a provider"),
        ("module.exports = class { callApi() {} };", "callApi returned undefined, not {output: ...}"),
        (
            "module.exports = class { async callApi(p) { return (await fetch('http://x')).text(); } };",
            "without network, files or Node modules: call your model from a Python provider",
        ),
        (
            "const data = fetch('http://x/data.json');\nmodule.exports = class { callApi() {} };",
            "p.js: the provider could not be set up: evalh runs JavaScript providers in an embedded engine",
        ),
        (
            "module.exports = class { callApi() { return {output: process.env.MODEL}; } };",
            "process is not defined (the engine has no Node globals; pass values in the provider's config",
        ),
    ],
)
def test_a_failing_provider_gives_an_error_row_naming_why(tmp_path: Path, code: str, expected: str) -> None:
    result, rows = _run(_config(tmp_path, "[file://p.js, echo]", {"p.js": code}))
    assert "Traceback" not in result.output
    assert expected in _error(rows[0])
    assert rows[1]["success"] is True  # the other provider's row is unaffected


def test_a_call_past_its_deadline_is_stopped_with_an_error_row(tmp_path: Path) -> None:
    code = "module.exports = class { callApi() { for (;;) {} } };"
    config = _config(tmp_path, "[{id: file://spin.js, config: {timeoutMs: 300}}]", {"spin.js": code})
    _, rows = _run(config)
    assert "timed out" in _error(rows[0]) and "config.timeoutMs" in _error(rows[0])


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("const OpenAI = require('openai');\nmodule.exports = class {};", "the npm package 'openai'"),
        ("module.exports = class { callApi( { };", "SyntaxError"),
    ],
)
def test_a_file_that_cannot_run_is_a_located_config_error(tmp_path: Path, code: str, expected: str) -> None:
    config = _config(tmp_path, "[echo, file://p.js]", {"p.js": code})
    result, _ = _run(config)
    assert result.exit_code == 2
    message = clean(result)
    assert "promptfooconfig.yaml:" in message and "providers[1]" in message and expected in message


def test_a_missing_provider_file_is_a_located_config_error(tmp_path: Path) -> None:
    config = _config(tmp_path, "[./nowhere.js]", {})
    result, _ = _run(config)
    assert result.exit_code == 2 and "file not found" in clean(result) and "nowhere.js" in clean(result)


def test_call_embedding_api_serves_similar(tmp_path: Path) -> None:
    embedder = """
    module.exports = class {
      async callEmbeddingApi(text) {
        return {embedding: [text.length, 1, 0], tokenUsage: {total: 1}};
      }
      callApi(prompt) { return {output: prompt}; }
    };
    """
    tests = "[{vars: {word: hi}, assert: [{type: similar, value: 'Say yo', provider: file://embed.js}]}]"
    rows = _rows(tmp_path, "[echo]", {"embed.js": embedder}, tests)
    (component,) = rows[0]["gradingResult"]["componentResults"]
    assert component["pass"] is True and component["score"] == pytest.approx(1.0)


def _loader_reads(suffix: str, tmp_path: Path) -> bool:
    probe = write(tmp_path / f"probe{suffix}", "export default class {}\n")
    try:
        file_source(str(probe), tmp_path, module_export=True)
    except JsFileProblem:
        return False
    return True


@pytest.mark.parametrize(
    ("file", "code"),
    [
        ("provider.mjs", "export default class { async callApi(p) { return {output: `esm ${p}`}; } }"),
        (
            "provider.ts",
            "interface Reply { output: string }\n"
            "export default class Provider {\n"
            "  id(): string { return 'ts'; }\n"
            "  async callApi(prompt: string): Promise<Reply> { return {output: `ts ${prompt}`}; }\n"
            "}\n",
        ),
    ],
)
def test_es_module_and_typescript_providers_once_the_loader_reads_them(
    tmp_path: Path, file: str, code: str
) -> None:
    if not _loader_reads(Path(file).suffix, tmp_path):
        pytest.skip(f"the JavaScript loader does not read {Path(file).suffix} files yet")
    rows = _rows(
        tmp_path,
        f"[file://{file}]",
        {file: code},
    )
    assert rows[0]["response"]["output"].endswith(" Say hi")


def test_reports_show_the_id_and_label_the_provider_gives_itself(tmp_path: Path) -> None:
    named = "module.exports = class { id() { return 'my-model'; } callApi(p) { return {output: p}; } };"
    labelled = (
        "module.exports = class { label = 'own label'; id() { return 'labelled'; }"
        " callApi(p) { return {output: p}; } };"
    )
    rows = _rows(
        tmp_path,
        "[file://named.js, {id: file://labelled.js, label: from-config}, file://provider.js]",
        {"named.js": named, "labelled.js": labelled, "provider.js": CLASS_PROVIDER},
    )
    # promptfoo: {id: provider.id(), label: provider.label ||= the config's label}
    assert [row["provider"] for row in rows] == [
        {"id": "my-model", "label": "my-model"},
        {"id": "labelled", "label": "own label"},
        {"id": "echo-custom", "label": "echo-custom"},
    ]
    columns = json.loads((tmp_path / "out.json").read_text())["results"]["prompts"]
    assert [column["provider"] for column in columns] == ["my-model", "own label", "echo-custom"]


def test_a_provider_that_cannot_be_named_at_load_keeps_its_file_id(tmp_path: Path) -> None:
    code = "module.exports = class { constructor() { throw new Error('no key'); } id() { return 'x'; } };"
    config = _config(tmp_path, "[file://p.js]", {"p.js": code})
    _, rows = _run(config)
    assert rows[0]["provider"]["id"] == "file://p.js" and "no key" in _error(rows[0])


def test_a_javascript_provider_grades_as_defaulttests_judge(tmp_path: Path) -> None:
    grader = """
    module.exports = class {
      async callApi(prompt) {
        const pass = prompt.includes('Say hi');
        return {output: JSON.stringify({pass, score: pass ? 1 : 0, reason: pass ? 'greets' : 'does not'})};
      }
    };
    """
    config = _config(tmp_path, "[echo]", {"grader.js": grader}, "[{vars: {word: hi}}, {vars: {word: yo}}]")
    judged = (
        "defaultTest: {options: {provider: file://grader.js}, assert: [{type: llm-rubric, value: hello}]}\n"
    )
    config.write_text(config.read_text() + judged)
    result, rows = _run(config)
    assert result.exit_code == 1, clean(result)  # one test fails
    verdicts = [(row["success"], row["gradingResult"]["componentResults"][0]["reason"]) for row in rows]
    assert verdicts == [(True, "greets"), (False, "does not")]


def test_filter_providers_matches_the_id_a_provider_gives_itself(tmp_path: Path) -> None:
    named = "module.exports = class { id() { return 'my-model'; } callApi(p) { return {output: p}; } };"
    config = _config(tmp_path, "[echo, file://named.js]", {"named.js": named})
    result, rows = _run(config, "--filter-providers", "^my-model$")
    assert result.exit_code == 0, clean(result)
    assert [row["provider"]["id"] for row in rows] == ["my-model"]


@pytest.mark.parametrize(
    "usage", ['tokenUsage: "lots", cost: "cheap"', "tokenUsage: {total: [1], prompt: {}}, cost: NaN"]
)
def test_usage_and_cost_that_are_not_numbers_count_as_nothing(tmp_path: Path, usage: str) -> None:
    # promptfoo adds `tokenUsage.total || 0`: such a reply's output stands (it was a Python error row)
    code = f"module.exports = class {{ callApi(p) {{ return {{output: p, {usage}}}; }} }};"
    rows = _rows(tmp_path, "[file://p.js]", {"p.js": code})
    assert rows[0]["success"] is True, rows[0]
    assert rows[0]["response"]["output"] == "Say hi"
    assert rows[0]["response"]["tokenUsage"]["total"] == 0
