"""The JSON report: promptfoo's output-file shape, validated against schemas/report.schema.json."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from evalh.model import Status
from evalh.reports import codec as report_codec
from evalh.reports.json import new_memo, result_to_json, to_promptfoo_json
from evalh.reports.writers import JsonlStream, write_reports
from evalh.secrets import redact_config as redact
from tests.reports.golden import assert_golden
from tests.reports.sample import NASTY_OUTPUT, large_run, sample_run, with_results

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "report.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _normalised(document: dict[str, Any]) -> str:
    document = json.loads(json.dumps(document))
    document["evalId"] = "<evalId>"
    document["metadata"] = {key: f"<{key}>" for key in document["metadata"]}
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def _written(tmp_path: Path) -> dict[str, Any]:
    (path,) = write_reports(sample_run(), [tmp_path / "out" / "report.json"])
    loaded: dict[str, Any] = json.loads(path.read_bytes())
    return loaded


def test_schema_has_draft_2020_12_and_an_id() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("report.schema.json")


def test_written_report_validates_against_schema(tmp_path: Path, validator: Any) -> None:
    validator.validate(_written(tmp_path))


def test_schema_rejects_a_broken_report(tmp_path: Path, validator: Any) -> None:
    document = _written(tmp_path)
    document["results"]["results"][0]["failureReason"] = 3
    del document["results"]["stats"]["errors"]
    messages = {error.message for error in validator.iter_errors(document)}
    assert "3 is not one of [0, 1, 2]" in messages
    assert "'errors' is a required property" in messages
    document["results"]["results"][0]["failureReason"] = 0
    document["results"]["results"][0]["success"] = False  # contradicts failureReason 0
    document["results"]["stats"]["errors"] = 2
    assert [e.message for e in validator.iter_errors(document)] == ["True was expected"]


def test_json_matches_golden(tmp_path: Path) -> None:
    assert_golden("report.json", _normalised(_written(tmp_path)))


def test_top_level_and_stats(tmp_path: Path) -> None:
    document = _written(tmp_path)
    results = document["results"]
    assert document["evalId"].startswith("eval-") and document["evalId"].endswith("2025-01-02T03:04:05")
    assert results["version"] == 3 and results["timestamp"] == "2025-01-02T03:04:05.678Z"
    assert results["stats"]["successes"] == 5
    assert results["stats"]["failures"] == 5
    assert results["stats"]["errors"] == 2
    assert results["stats"]["durationMs"] == 4321.0
    # 8 rows on the gpt provider used 20 tokens each, except the provider error.
    assert results["stats"]["tokenUsage"]["total"] == 5 * 20
    assert results["stats"]["tokenUsage"]["assertions"]["total"] == 4 * 12
    assert results["evalh"]["passRate"] == pytest.approx(500 / 12)
    assert [u["provider"] for u in results["evalh"]["providerUsage"]][-1] == "local:minilm"
    assert results["evalh"]["providerUsage"][-1]["cacheHits"] == 4
    assert results["aggregates"]["namedScores"]["accuracy"]["mean"] == pytest.approx((0.955 + 0.71) / 2)
    assert results["aggregates"]["counts"] == {"rows": 12, "passed": 5, "failed": 5, "errors": 2}
    assert document["metadata"]["evalhVersion"]


def test_prompts_are_columns_with_metrics(tmp_path: Path) -> None:
    prompts = _written(tmp_path)["results"]["prompts"]
    assert [(p["provider"], p["label"]) for p in prompts] == [
        ("echo", "greet"),
        ("echo", "chat"),
        ("gpt", "greet"),
        ("gpt", "chat"),
    ]
    gpt_chat = prompts[3]["metrics"]
    assert (gpt_chat["testPassCount"], gpt_chat["testFailCount"], gpt_chat["testErrorCount"]) == (0, 2, 1)
    # promptfoo's column sums: the row's weighted mean x its summed weight, and the assertions counted
    assert gpt_chat["namedScoresCount"] == {"accuracy": 2}
    assert gpt_chat["namedScores"]["accuracy"] == pytest.approx(0.71 * 2)
    assert prompts[1]["raw"] == '[{"role": "user", "content": "Hi {{name}}"}]'


def test_rows_follow_promptfoo_fields() -> None:
    run = sample_run()
    rows = [result_to_json(r) for r in run.results]
    by_status = {s: [d for r, d in zip(run.results, rows, strict=True) if r.status is s] for s in Status}
    assert {d["failureReason"] for d in by_status[Status.PASS]} == {0}
    assert {d["failureReason"] for d in by_status[Status.FAIL]} == {1}
    assert {d["failureReason"] for d in by_status[Status.ERROR]} == {2}
    assert all(d["success"] is False and d["error"] for d in by_status[Status.FAIL] + by_status[Status.ERROR])
    failed = by_status[Status.FAIL][0]
    assert failed["error"] == failed["gradingResult"]["reason"]
    assert rows[1]["prompt"] == {"raw": '[{"role": "user", "content": "Hi Ada"}]', "label": "chat"}
    assert rows[2]["provider"] == {"id": "openai:chat:gpt-4o-mini", "label": "gpt"}
    assert rows[2]["tokenUsage"]["assertions"]["total"] == 12
    assert rows[0]["namedScores"] == {"accuracy": pytest.approx(0.955)}


def test_provider_error_row_has_null_grading_result() -> None:
    run = sample_run()
    row = next(r for r in run.results if r.status is Status.ERROR and not r.assertions)
    data = result_to_json(row)
    assert data["gradingResult"] is None
    assert data["response"]["error"] == row.error
    assert data["error"] == row.error
    assert data["response"]["output"] is None


def test_assertion_error_row_keeps_its_components() -> None:
    run = sample_run()
    row = next(r for r in run.results if r.status is Status.ERROR and r.assertions)
    data = result_to_json(row)
    components = data["gradingResult"]["componentResults"]
    assert [c.get("error", False) for c in components] == [False, True]
    assert components[1]["metadata"]["traceback"].endswith("ZeroDivisionError")
    assert data["response"]["error"] is None
    assert data["error"].startswith("python crashed")


def test_assert_set_children_nested_and_flattened_after_the_set() -> None:
    row = sample_run().results[4]  # test 2 on echo: not-contains + assert-set(equals, icontains)
    components = result_to_json(row)["gradingResult"]["componentResults"]
    types = [c["assertion"]["type"] for c in components]
    assert types == ["not-contains", "assert-set", "equals", "icontains"]
    nested = [c["assertion"]["type"] for c in components[1]["componentResults"]]
    assert nested == ["equals", "icontains"]
    assert components[1]["assertion"]["threshold"] == 0.5


def test_not_assertions_keep_full_type_and_metric() -> None:
    row = sample_run().results[0]
    components = result_to_json(row)["gradingResult"]["componentResults"]
    assert components[1]["assertion"] == {
        "type": "similar",
        "value": "Hello Ada",
        "threshold": 0.8,
        "metric": "accuracy",
    }
    assert components[1]["tokensUsed"]["total"] == 12
    assert components[1]["metadata"]["similarity"] == 0.91
    last = result_to_json(sample_run().results[-1])["gradingResult"]["componentResults"][0]
    assert last["assertion"]["type"] == "not-regex" and last["pass"] is False


def test_the_rows_of_a_test_share_its_conversion_redacted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's rows (2 prompts x 2 providers) share its testCase, vars and assertions: its config is
    redacted once, not once per row."""
    redacted: list[Any] = []
    monkeypatch.setattr(report_codec, "redact", lambda value: redacted.append(value) or redact(value))
    memo = new_memo()
    rows = [row for row in sample_run().results if row.test.index == 1]
    documents = [result_to_json(row, memo=memo) for row in rows]
    assert len(documents) == 4 and len({id(document["testCase"]) for document in documents}) == 1
    assert all(document["vars"] is document["testCase"]["vars"] for document in documents)
    assert len(redacted) == 5  # not-contains, the assert-set and its 2 members as written; the options
    assert documents[3]["testCase"]["options"]["provider"]["config"]["api_key"] == "[REDACTED]"
    graded = next(n for n, document in enumerate(documents) if document["gradingResult"])
    components = documents[graded]["gradingResult"]["componentResults"]
    types = ["not-contains", "assert-set", "equals", "icontains"]
    assert [component["assertion"]["type"] for component in components] == types
    assert components == result_to_json(rows[graded])["gradingResult"]["componentResults"]


def test_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    (path,) = write_reports(sample_run(), [tmp_path / "r.json"])
    text = path.read_text(encoding="utf-8")
    assert "sk-secret-123" not in text and "sk-other" not in text
    assert '"apiKey": "[REDACTED]"' in text and '"api_key": "[REDACTED]"' in text


def test_redact_keeps_ordinary_keys() -> None:
    value = {"max_tokens": 5, "headers": {"Authorization": "Bearer x", "X-Trace": "t"}, "OPENAI_API_KEY": "k"}
    assert redact(value) == {
        "max_tokens": 5,
        "headers": {"Authorization": "[REDACTED]", "X-Trace": "t"},
        "OPENAI_API_KEY": "[REDACTED]",
    }


def test_lone_surrogate_and_control_characters_round_trip(tmp_path: Path) -> None:
    (path,) = write_reports(sample_run(), [tmp_path / "r.json"])
    raw = path.read_bytes()
    raw.decode("utf-8")  # valid UTF-8 despite the lone surrogate in the output
    outputs = [r["response"]["output"] for r in json.loads(raw)["results"]["results"]]
    assert NASTY_OUTPUT in outputs


def test_jsonl_stream_writes_one_line_per_row_as_it_goes(tmp_path: Path) -> None:
    run = sample_run()
    path = tmp_path / "deep" / "rows.jsonl"
    with JsonlStream(path) as stream:
        stream.write(run.results[0])
        assert len(path.read_text(encoding="utf-8").splitlines()) == 1  # flushed at once
        for row in run.results[1:]:
            stream.write(row)
    lines = path.read_bytes().decode("utf-8").splitlines()
    assert len(lines) == len(run.results)
    assert [json.loads(line)["id"] for line in lines] == [r.id for r in run.results]
    assert json.loads(lines[8])["response"]["output"] == NASTY_OUTPUT


def test_jsonl_rows_validate_against_the_result_definition(tmp_path: Path) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    row_validator = jsonschema.Draft202012Validator({"$ref": "#/$defs/result", "$defs": schema["$defs"]})
    (path,) = write_reports(sample_run(), [tmp_path / "rows.jsonl"])
    for line in path.read_text(encoding="utf-8").splitlines():
        row_validator.validate(json.loads(line))


def test_large_run_validates(validator: Any) -> None:
    validator.validate(json.loads(json.dumps(to_promptfoo_json(large_run(200, 3)))))


def test_strict_json_for_nan_and_numpy_values(tmp_path: Path) -> None:
    run = sample_run()
    rows = list(run.results)
    graded = rows[0].assertions[1]
    odd = dataclasses.replace(graded, details={"similarity": np.float32(0.5), "vector": np.arange(3)})
    rows[0] = dataclasses.replace(rows[0], score=math.nan, assertions=(rows[0].assertions[0], odd))
    (path,) = write_reports(with_results(run, rows), [tmp_path / "r.json"])

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    data = json.loads(path.read_bytes(), parse_constant=refuse)
    row = data["results"]["results"][0]
    assert row["score"] is None
    assert row["gradingResult"]["componentResults"][1]["metadata"] == {"similarity": 0.5, "vector": [0, 1, 2]}


def test_an_interrupted_report_names_the_signal_and_validates(validator: Any) -> None:
    run = dataclasses.replace(sample_run(), interrupted=True, interrupted_by="SIGHUP", not_run=4)
    document = json.loads(json.dumps(to_promptfoo_json(run)))
    validator.validate(document)
    block = document["results"]["evalh"]
    assert (block["interrupted"], block["interruptedBy"], block["notRun"]) == (True, "SIGHUP", 4)
    block["interruptedBy"] = "SIGKILL"  # no report can be written after that one
    assert not validator.is_valid(document)
