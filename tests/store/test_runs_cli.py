"""evalh runs list|show|delete|prune|import through the command line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.store.helpers import evalh, report, write_config


def test_list_show_delete_prune(tmp_path: Path) -> None:
    assert "No runs" in evalh("runs", "list").stdout
    config = write_config(tmp_path, {"one?": "yes", "two?": "no"})
    for _ in range(3):
        evalh("run", config, "--no-table")
    listed = evalh("runs", "list")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == 3 and all("1/2 passed (50.0%)" in line and "store test" in line for line in lines)
    newest = lines[0].split()[0]
    as_json = json.loads(evalh("runs", "list", "--json", "-n", "1").stdout)
    assert [run["id"] for run in as_json] == [newest] and as_json[0]["failed"] == 1
    shown = evalh("runs", "show", "latest")
    assert shown.exit_code == 0, shown.output
    assert newest in shown.stdout and "FAIL 0.00" in shown.stdout and "- icontains:" in shown.stdout
    stored = json.loads(evalh("runs", "show", newest, "--json").stdout)
    assert stored["evalId"] == newest and len(stored["results"]["results"]) == 2
    assert evalh("runs", "delete", "latest").stdout.strip() == f"Deleted {newest}"
    assert "Deleted 1 run(s), kept the newest 1." in evalh("runs", "prune", "--keep", "1").stdout
    assert len(evalh("runs", "list").stdout.splitlines()) == 1
    gone = evalh("runs", "show", newest)
    assert gone.exit_code == 2 and "no run" in gone.stderr


def test_import_a_report_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    evalh("run", config, "--no-table", "--no-write", "-o", tmp_path / "ci.json")
    eval_id = report(tmp_path / "ci.json")["evalId"]
    result = evalh("runs", "import", tmp_path / "ci.json")
    assert result.exit_code == 0, result.output
    assert f"as {eval_id} (1/1 passed)" in result.stdout
    assert "(imported)" in evalh("runs", "list").stdout
    assert evalh("diff", eval_id, tmp_path / "ci.json").exit_code == 0
    again = evalh("runs", "import", tmp_path / "ci.json")
    assert again.exit_code == 2 and "already" in again.stderr
    (tmp_path / "bad.json").write_text('{"results": 3}')
    bad = evalh("runs", "import", tmp_path / "bad.json")
    assert bad.exit_code == 2 and "is not an evalh or promptfoo JSON report" in bad.stderr


def test_an_imported_report_keeps_no_secret(tmp_path: Path) -> None:
    """A promptfoo report may hold secrets in its config and test options: they are redacted by name."""
    config = write_config(tmp_path, {"one?": "yes"})
    evalh("run", config, "--no-table", "--no-write", "-o", tmp_path / "ci.json")
    document = report(tmp_path / "ci.json")
    document["config"]["providers"] = [{"id": "openai:chat:x", "config": {"apiKey": "sk-planted-import-1"}}]
    document["results"]["results"][0]["testCase"]["options"] = {
        "provider": {"config": {"apiKey": "sk-planted-import-2"}}
    }
    (tmp_path / "ci.json").write_text(json.dumps(document))
    assert evalh("runs", "import", tmp_path / "ci.json").exit_code == 0
    stored = b"".join(p.read_bytes() for p in (tmp_path / "evalh-home").iterdir() if p.is_file())
    assert b"[REDACTED]" in stored and b"sk-planted-import" not in stored
