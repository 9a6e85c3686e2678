"""A row's trace at rest (issue 26): the row key ``trace`` as the JSON report writes it, read back into the
RowTrace it came from (so ``--retry-errors`` and ``evalh merge`` keep it), checked when a report is read
from disk, and redacted of secrets like every other text a provider's code produced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.errors import ConfigError
from evalh.reports.codec import result_to_json, trace_to_json
from evalh.reports.codec_check import MAX_TRACE_SPANS, read_report_file
from evalh.reports.codec_read import result_from_row, row_trace, trace_from_json
from evalh.reports.writers import write_reports
from evalh.runner.plan import Job
from evalh.secrets import register
from tests.reports.sample import sample_run
from tests.reports.test_json import SCHEMA_PATH
from tests.reports.traced import TRACE_ID, agent_trace, traced_run


def _written(tmp_path: Path, name: str = "r.json", **kw: Any) -> dict[str, Any]:
    (path,) = write_reports(traced_run(**kw), [tmp_path / name])
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_a_traced_row_keeps_its_spans_beside_promptfoos_keys(tmp_path: Path) -> None:
    rows = _written(tmp_path)["results"]["results"]
    untraced = result_to_json(sample_run().results[0])
    assert list(rows[0]) == [*untraced, "trace"]  # promptfoo's keys as they were, then evalh's
    assert ["trace" in row for row in rows] == [index in (0, 3) for index in range(len(rows))]
    trace = rows[3]["trace"]
    assert trace["traceId"] == TRACE_ID and trace["dropped"] == 0
    root, chat, tool, unended = trace["spans"]
    assert root == {
        "traceId": TRACE_ID,
        "spanId": "b7ad6b7169203331",
        "parentSpanId": None,
        "name": "agent.run",
        "kind": "SERVER",
        "startTime": 1764300000123.456,
        "endTime": 1764300000373.956,
        "durationMs": 250.5,
        "attributes": {},
        "status": {"code": "UNSET", "message": ""},
        "service": "agent",
    }
    assert chat["parentSpanId"] == root["spanId"] and chat["attributes"]["gen_ai.usage.input_tokens"] == 42
    assert tool["attributes"] == {
        "tool.name": "get_weather",
        "tool.arguments": '{"city": "Paris"}',
        "retries": [1, 2],
    }
    assert tool["status"] == {"code": "ERROR", "message": "weather service timed out"}
    assert unended["endTime"] is None and unended["durationMs"] is None


def test_reports_with_traces_validate_against_the_schema(tmp_path: Path) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(_written(tmp_path))
    (jsonl,) = write_reports(traced_run(), [tmp_path / "r.jsonl"])
    row_schema = jsonschema.Draft202012Validator({"$ref": "#/$defs/result", "$defs": schema["$defs"]})
    lines = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    for row in lines:
        row_schema.validate(row)
    assert lines[0]["trace"]["spans"][2]["name"] == "tool.call"


def test_a_trace_read_back_is_the_trace_written(tmp_path: Path) -> None:
    (path,) = write_reports(traced_run(), [tmp_path / "r.json"])
    rows = read_report_file(path)["results"]["results"]
    original = traced_run().results[3]
    job = Job(
        index=3,
        test=original.test,
        prompt=original.prompt,
        provider=original.provider,
        prompt_index=original.prompt_index,
        provider_index=original.provider_index,
        repeat_index=0,
        rendered_prompt=original.rendered_prompt,
    )
    assert result_from_row(rows[3], job).trace == agent_trace()  # every time to the nanosecond
    assert result_from_row(rows[1], job).trace is None  # an untraced row (or promptfoo's) has none
    assert trace_from_json(row_trace(rows[0])) == agent_trace()


def _damaged(tmp_path: Path, damage: Any) -> Path:
    document = _written(tmp_path)
    damage(document["results"]["results"][3]["trace"])
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda t: t["spans"][1].update(startTime="soon"),
            "results.results[3].trace.spans[1].startTime must be Unix milliseconds from 0 to "
            "18,446,744,073,710 or null, not a string ('soon')",
        ),
        (  # finite, but no time in nanoseconds: reading it back was an internal error (--retry-errors)
            lambda t: t["spans"][0].update(endTime=1e308),
            "results.results[3].trace.spans[0].endTime must be Unix milliseconds",
        ),
        (
            lambda t: t["spans"][0].update(startTime=-1.5),
            "results.results[3].trace.spans[0].startTime must be",
        ),
        (
            lambda t: t["spans"][2].update(attributes=["tool.name"]),
            "results.results[3].trace.spans[2].attributes must be an object or null, not a list",
        ),
        (
            lambda t: t["spans"][0]["status"].update(code=2),
            "results.results[3].trace.spans[0].status.code must be a string or null, not the number 2",
        ),
        (lambda t: t.update(dropped=-1), "results.results[3].trace.dropped must be a whole number"),
        (
            lambda t: t.update(spans=t["spans"][:1] * (MAX_TRACE_SPANS + 1)),
            f"results.results[3].trace.spans must hold at most {MAX_TRACE_SPANS:,} items, not 10,001",
        ),
    ],
)
def test_a_damaged_trace_is_a_located_error(tmp_path: Path, damage: Any, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        read_report_file(_damaged(tmp_path, damage))
    assert message in str(raised.value) and "damaged.json" in str(raised.value)


def test_runs_import_of_a_damaged_trace_exits_2_naming_the_field(tmp_path: Path) -> None:
    path = _damaged(tmp_path, lambda t: t.update(spans={"0": "root"}))
    result = CliRunner().invoke(app, ["runs", "import", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "results.results[3].trace.spans must be a list or null, not an object" in result.stderr


def test_a_trace_of_spans_at_the_bound_is_read(tmp_path: Path) -> None:
    path = _damaged(tmp_path, lambda t: t.update(spans=t["spans"][:1] * MAX_TRACE_SPANS))
    assert len(read_report_file(path)["results"]["results"][3]["trace"]["spans"]) == MAX_TRACE_SPANS


PLANTED = "planted-secret-9f8e7d"  # a secret the run registered (an API key from the config or env)


def test_secrets_in_span_names_attributes_and_messages_are_redacted(tmp_path: Path) -> None:
    register(PLANTED)
    attributes = {
        "http.request.header.authorization": "Bearer abc123xyz789",  # a secret by its name
        "llm.api_key": "sk-live-0123456789",
        "http.url": "https://agent:hunter2pw@api.example.com/v1?api_key=qwerty987&q=weather",
        "tool.arguments": json.dumps({"city": "Paris", "note": f"key {PLANTED}"}),
        "nested": {"password": "pw-very-secret", "kept": "plain"},
    }
    trace = agent_trace(attributes, status_message=f"refused {PLANTED}", status_code="ERROR")
    (path,) = write_reports(traced_run(trace), [tmp_path / "r.json"])
    text = path.read_text(encoding="utf-8")
    for secret in (PLANTED, "abc123xyz789", "sk-live-0123456789", "hunter2pw", "qwerty987", "pw-very-secret"):
        assert secret not in text
    tool = json.loads(text)["results"]["results"][0]["trace"]["spans"][2]["attributes"]
    assert tool["http.request.header.authorization"] == "[REDACTED]" and tool["llm.api_key"] == "[REDACTED]"
    assert tool["http.url"] == "https://agent:[REDACTED]@api.example.com/v1?api_key=[REDACTED]&q=weather"
    assert json.loads(tool["tool.arguments"]) == {"city": "Paris", "note": "key [REDACTED]"}
    assert tool["nested"] == {"password": "[REDACTED]", "kept": "plain"}
    root = json.loads(text)["results"]["results"][0]["trace"]["spans"][0]
    assert root["status"] == {"code": "ERROR", "message": "refused [REDACTED]"}


def test_secret_keys_inside_json_text_attributes_are_redacted(tmp_path: Path) -> None:
    """OTel SDKs send tool arguments as JSON text; a credential under a secret-looking key in it was kept
    in the report (and the store, the HTML) while the trajectory reasons quoting it redacted it."""
    arguments = json.dumps({"city": "Paris", "login": {"password": "pw-in-the-args"}})
    attributes = {"tool.arguments": arguments, "tool.input": '[1, {"api_key": "sk-in-a-list"}]'}
    path, _ = write_reports(traced_run(agent_trace(attributes)), [tmp_path / "r.json", tmp_path / "r.html"])
    text = path.read_text(encoding="utf-8")
    assert "pw-in-the-args" not in text and "sk-in-a-list" not in text
    assert "pw-in-the-args" not in (tmp_path / "r.html").read_text(encoding="utf-8")
    tool = json.loads(text)["results"]["results"][0]["trace"]["spans"][2]["attributes"]
    assert json.loads(tool["tool.arguments"]) == {"city": "Paris", "login": {"password": "[REDACTED]"}}
    assert json.loads(tool["tool.input"]) == [1, {"api_key": "[REDACTED]"}]
    assert tool["tool.name"] == "get_weather"  # text that is not JSON, or JSON with no secret, as it was


def _with_trace(report: Path, index: int) -> None:
    """The report as a traced run writes it: the row at ``index`` carrying the agent's trace."""
    document = json.loads(report.read_text(encoding="utf-8"))
    document["results"]["results"][index]["trace"] = trace_to_json(agent_trace())
    report.write_text(json.dumps(document), encoding="utf-8")


PROVIDER = """
def call_api(prompt, options, context):
    return {"error": "service down"} if "boom" in prompt else {"output": prompt}
"""
SUITE = """
prompts: ["say {{n}}"]
providers: ["python:agent.py"]
tests:
  - {vars: {n: one}, assert: [{type: contains, value: one}]}
  - {vars: {n: boom}, assert: [{type: contains, value: two}]}
  - {vars: {n: three}, assert: [{type: contains, value: three}]}
"""
RUN_FLAGS = ("--no-table", "--no-progress-bar", "--no-write", "--no-cache")


@pytest.fixture
def suite_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent.py").write_text(PROVIDER, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _traces(report: Path) -> list[Any]:
    return [row.get("trace") for row in json.loads(report.read_text(encoding="utf-8"))["results"]["results"]]


def test_retry_errors_keeps_the_traces_of_the_rows_it_does_not_rerun(suite_dir: Path) -> None:
    evalh = CliRunner()
    first = evalh.invoke(app, ["run", "-c", "suite.yaml", *RUN_FLAGS, "-o", "run.json"])
    assert first.exit_code == 1, first.output
    _with_trace(suite_dir / "run.json", 0)
    again = evalh.invoke(app, ["run", "-c", "suite.yaml", *RUN_FLAGS, "--retry-errors", "-o", "run.json"])
    assert again.exit_code == 1 and "re-running 1 test" in again.output
    assert _traces(suite_dir / "run.json") == [trace_to_json(agent_trace()), None, None]


def test_merge_keeps_the_traces_of_the_shards_rows(suite_dir: Path) -> None:
    evalh = CliRunner()
    for share in (1, 2):
        shard = evalh.invoke(
            app, ["run", "-c", "suite.yaml", *RUN_FLAGS, "--shard", f"{share}/2", "-o", f"s{share}.json"]
        )
        assert shard.exit_code in (0, 1), shard.output

    _with_trace(suite_dir / "s1.json", 0)
    merged = evalh.invoke(app, ["merge", "s1.json", "s2.json", "-o", "merged.json", "--no-table"])
    assert merged.exit_code == 1, merged.output
    kept = [trace for trace in _traces(suite_dir / "merged.json") if trace is not None]
    assert kept == [trace_to_json(agent_trace())]
