"""What ``calibrate --labels REF -o`` names as the labels' run: the run's id (or the report file), which
``evalh runs show`` and ``--labels`` take back, not the sentence's "run ID"; and a rated row whose recorded
``output:`` was edited in the config is said to be so, not only blamed on a provider answering anew."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.store.runs import open_store
from tests.calibration.test_labels import CASES, REFERENCE, _calibrate, _config, _rate, _run


def test_the_json_names_the_labels_run_by_its_id_and_the_report_file_by_its_path(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    rows = _run(path)
    _rate(rows, {i: verdict for i, (_, _, verdict) in enumerate(CASES)})
    with open_store() as store:
        run_id = store.resolve("latest").id
    result, document = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 0, result.output
    assert document["labels"]["run"] == run_id
    assert f"Labels from the ratings of run {run_id}:" in result.output  # the sentence keeps its words
    shown = CliRunner().invoke(app, ["runs", "show", document["labels"]["run"], "--json"])
    assert shown.exit_code == 0 and json.loads(shown.output)["evalId"] == run_id
    export = tmp_path / "rated.json"
    assert CliRunner().invoke(app, ["runs", "show", "latest", "-o", str(export)]).exit_code == 0
    result, document = _calibrate(path, tmp_path, "--labels", str(export))
    assert result.exit_code == 0, result.output
    assert document["labels"]["run"] == str(export)


def test_an_edited_recorded_output_is_named_as_a_cause(tmp_path: Path) -> None:
    path = tmp_path / "recorded.yaml"
    tests = [
        {
            "description": f"case {i}",
            "output": output,
            "assert": [{"type": "levenshtein", "value": REFERENCE}],
        }
        for i, (output, _, _) in enumerate(CASES)
    ]
    path.write_text(yaml.safe_dump({"tests": tests}, sort_keys=False), encoding="utf-8")
    rows = _run(path)
    _rate(rows, {i: verdict for i, (_, _, verdict) in enumerate(CASES)})
    tests[0]["output"] = "edited after rating"
    path.write_text(yaml.safe_dump({"tests": tests}, sort_keys=False), encoding="utf-8")
    result, document = _calibrate(path, tmp_path, "--labels", "latest")
    assert document["labels"]["outputChanged"] == 1, result.output
    assert "or the config's recorded output changed" in result.output
