"""The run store: every run recorded as its JSON report, references, delete/prune, damage, newer
stores, migrations from version 1, and two processes recording at once."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalh.errors import ConfigError, StoreError
from evalh.reports.streamed import ConfigEcho, EncodedConfig, row_text
from evalh.reports.writers import write_each_report
from evalh.secrets import MARKER, register
from evalh.store import SCHEMA_VERSION, load_report, open_store, row_key, schema, store_path
from evalh.store.recording import Recording, recording
from tests.reports.sample import sample_run
from tests.store.helpers import echo_config, evalh, report, write_config

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _without_ids(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "id"} for row in rows]


def test_a_run_is_stored_as_its_json_report(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes", "two?": "no"})
    result = evalh("run", config, "-o", tmp_path / "out.json", "--no-table")
    assert result.exit_code == 1, result.output
    written = report(tmp_path / "out.json")
    with open_store() as store:
        (run,) = store.list_runs()
        stored = store.load_run("latest")
    assert run.id == written["evalId"] == stored["evalId"]  # one id for the store and the reports
    assert (run.rows, run.passed, run.failed, run.errors, run.state) == (2, 1, 1, 0, "complete")
    assert run.config_path == str(config.resolve())
    assert _without_ids(stored["results"]["results"]) == _without_ids(written["results"]["results"])
    assert stored["results"]["stats"] == written["results"]["stats"]
    assert stored["config"] == written["config"]  # stored when the run started, kept at its end
    assert list(stored) == list(written)  # evalId, results, config, shareableUrl, metadata
    assert stored["metadata"]["evalhVersion"] == written["metadata"]["evalhVersion"]
    assert stored["results"]["aggregates"] == written["results"]["aggregates"]


def test_each_row_is_encoded_once_for_the_store_and_every_report(tmp_path: Path) -> None:
    config = echo_config(tmp_path, 5)
    outputs = ("-o", tmp_path / "out.json", "-o", tmp_path / "out.jsonl")
    assert evalh("run", config, *outputs, "--no-table").exit_code == 0
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    with sqlite3.connect(store_path()) as db:  # the stored texts themselves, not their parse
        bodies = [body for (body,) in db.execute("SELECT body FROM rows ORDER BY position")]
    assert bodies == lines  # the same text, ids included, in the order the rows finished
    written = report(tmp_path / "out.json")["results"]["results"]
    assert sorted(json.dumps(row) for row in written) == sorted(json.dumps(json.loads(b)) for b in bodies)


def test_no_write_records_nothing(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    assert evalh("run", config, "--no-write", "--no-table").exit_code == 0
    assert not store_path().exists()


def test_references_latest_n_prefix_and_files(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    for _ in range(3):
        assert evalh("run", config, "--no-table").exit_code == 0
    with open_store() as store:
        newest, middle, oldest = store.list_runs()
        assert store.resolve("latest").id == newest.id
        assert store.resolve("latest~2").id == oldest.id
        assert store.resolve(middle.id[:-1]).id == middle.id  # a prefix naming one run
        with pytest.raises(ConfigError, match="names 3 runs"):
            store.resolve("eval-")
        with pytest.raises(ConfigError, match=r"no run 'latest~3'.*3 run"):
            store.resolve("latest~3")
        assert load_report("latest~1", store)["evalId"] == middle.id
    evalh("run", config, "--no-table", "-o", tmp_path / "r.json")
    assert load_report(str(tmp_path / "r.json"))["evalId"] == load_report("latest")["evalId"]


def test_delete_and_prune(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    for _ in range(4):
        evalh("run", config, "--no-table")
    with open_store() as store:
        ids = [run.id for run in store.list_runs()]
        assert store.delete("latest~1").id == ids[1]
        assert [run.id for run in store.prune(keep=1)] == ids[2:]
        assert [run.id for run in store.list_runs()] == ids[:1]
        with store.transaction() as db:
            assert db.execute("SELECT COUNT(*) FROM rows").fetchone() == (1,)  # rows went too


def test_a_damaged_store_is_set_aside_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_path().parent.mkdir(parents=True)
    store_path().write_bytes(b"this is not a database, " * 100)
    config = write_config(tmp_path, {"one?": "yes"})
    result = evalh("run", config, "--no-table")
    assert result.exit_code == 0, result.output
    assert "run store" in caplog.text and "is damaged" in caplog.text and "moved it" in caplog.text
    (moved,) = store_path().parent.glob("runs.sqlite3.corrupt-*")
    assert moved.read_bytes().startswith(b"this is not a database")
    with open_store() as store:
        assert len(store.list_runs()) == 1  # the new store holds this run


def test_a_store_that_cannot_be_used_never_stops_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "home-file").write_text("a file where the store's directory goes")
    monkeypatch.setenv("EVALH_HOME", str(tmp_path / "home-file"))
    config = write_config(tmp_path, {"one?": "yes"})
    result = evalh("run", config, "--no-table", "--strict", "-o", tmp_path / "out.json")
    assert result.exit_code == 0, result.output
    assert "cannot use the run store" in caplog.text and "not recorded" in caplog.text
    assert report(tmp_path / "out.json")["results"]["stats"]["successes"] == 1


@pytest.mark.parametrize(("answer", "code"), [("yes", 0), ("no", 1)])
def test_a_directory_where_the_store_goes_leaves_the_run_unrecorded_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, answer: str, code: int
) -> None:
    store_path().mkdir(parents=True)
    config = write_config(tmp_path, {"one?": answer})
    result = evalh("run", config, "--no-table", "-o", tmp_path / "out.json")
    assert result.exit_code == code, result.output  # the tests' verdict, not an internal error
    assert "internal error" not in result.output
    (warning,) = [record.getMessage() for record in caplog.records if "run store" in record.getMessage()]
    assert str(store_path()) in warning and "not recorded" in warning and "Is a directory" in warning
    assert report(tmp_path / "out.json")["results"]["stats"]["successes"] == (answer == "yes")
    listed = evalh("runs", "list")  # the store's own commands say so (StoreError: exit 2)
    assert listed.exit_code == 2 and "cannot use the run store" in listed.output
    assert "internal error" not in listed.output
    # exit 1 from diff would read as "new failures", from run --baseline as "a test failed"
    compared = evalh("diff", "latest", tmp_path / "out.json")
    assert compared.exit_code == 2 and "cannot use the run store" in compared.output
    gated = evalh("run", config, "--no-table", "--baseline", "latest", "--fail-on", "regressions")
    assert gated.exit_code == 2 and "cannot use the run store" in gated.output


def test_a_store_of_a_newer_evalh_is_refused_not_changed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with open_store() as store, store.transaction() as db:
        db.execute("INSERT INTO schema_version VALUES (?, 'future')", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer evalh"):
        open_store()
    result = evalh("run", write_config(tmp_path, {"one?": "yes"}), "--no-table")
    assert result.exit_code == 0 and "newer evalh" in caplog.text
    assert not list(store_path().parent.glob("*.corrupt-*"))


_CONFIGS = "SELECT id, configs.config FROM runs LEFT JOIN configs ON configs.run_seq = runs.seq"
# a trigger in the store under test that refuses any change to a stored config
_NO_UPDATES_OF_CONFIGS = (
    "CREATE TRIGGER configs_untouched BEFORE UPDATE ON configs "
    "BEGIN SELECT RAISE(ABORT, 'a stored config was rewritten'); END"
)


def _old_store(fixture: str) -> Path:
    """The user's store as an older evalh left it (``fixture``: its SQL dump)."""
    path = store_path()
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.executescript((FIXTURES / fixture).read_text(encoding="utf-8"))
    db.close()
    return path


def test_migration_from_version_1(tmp_path: Path) -> None:
    _old_store("store_v1.sql")
    with open_store() as store:
        (run,) = store.list_runs()
        rows = list(store.iter_rows(run.id))
        with store.transaction() as db:
            versions = [v for (v,) in db.execute("SELECT version FROM schema_version ORDER BY version")]
            keys = [k for (k,) in db.execute("SELECT test_key FROM rows ORDER BY position")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    assert (run.id, run.rows, run.passed) == ("eval-v1a-2026-01-02T03:04:05", 2, 1)
    assert [row["description"] for row in rows] == ["capital", "greeting"]
    assert keys == [row_key(row) for row in rows] and len(set(keys)) == 2


def test_migration_from_version_2_moves_each_config_out_of_its_header(tmp_path: Path) -> None:
    path = _old_store("store_v2.sql")
    shown = evalh("runs", "show", "eval-v2a", "--json")
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.output)
    assert list(document) == ["evalId", "results", "config", "shareableUrl", "metadata"]  # report order
    assert document["config"]["providers"][0]["config"]["apiKey"] == "[REDACTED]"
    assert document["config"]["tests"] == [{"description": "capital", "vars": {"country": "France"}}]
    assert [row["description"] for row in document["results"]["results"]] == ["capital"]
    with open_store() as store:
        assert "config" not in store.load_run("eval-v2b")  # stored without one, loaded without one
    with sqlite3.connect(path) as db:
        stored = dict(db.execute("SELECT id, header FROM runs").fetchall())
        configs = dict(db.execute(_CONFIGS).fetchall())
    db.close()
    assert all("config" not in json.loads(header) for header in stored.values())  # finishing: small
    assert configs["eval-v2b-2026-02-03T04:05:07"] is None
    assert json.loads(configs["eval-v2a-2026-02-03T04:05:06"])["description"] == "v2 fixture"


def test_migration_to_version_4_keeps_every_row_in_a_rowid_table(tmp_path: Path) -> None:
    path = _old_store("store_v2.sql")
    with sqlite3.connect(path) as db:
        before = db.execute(
            "SELECT run_seq, position, status, body, test_key FROM rows ORDER BY 1, 2"
        ).fetchall()
    db.close()
    with open_store() as store:
        (run,) = [run for run in store.list_runs() if run.id.startswith("eval-v2a")]
        assert [row["description"] for row in store.iter_rows(run.id)] == ["capital"]
    with sqlite3.connect(path) as db:
        after = db.execute(
            "SELECT run_seq, position, status, body, test_key FROM rows ORDER BY 1, 2"
        ).fetchall()
        (table,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'rows'").fetchone()
        indexes = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'rows'")}
    db.close()
    assert after == before and before
    assert "WITHOUT ROWID" not in table  # a body of a few KB overflows such a table's pages: slow inserts
    assert "rows_by_test" in indexes


def test_migration_to_version_5_moves_each_config_to_a_table_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = [{"vars": {"q": f"question {i} é ☃"}, "assert": [{"type": "contains"}]} for i in range(2000)]
    text = row_text(
        {"description": "v4 run", "providers": [{"config": {"apiKey": "[REDACTED]"}}], "tests": tests}
    )
    header = json.dumps({"evalId": "eval-v4a", "results": {"version": 3, "results": []}, "metadata": {}})
    path = _old_store("store_v2.sql")
    with monkeypatch.context() as older:
        older.setattr(schema, "SCHEMA_VERSION", 4)  # the store as the evalh before this one left it
        open_store().close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM runs")
        runs = [("eval-v4a", header, text), ("eval-v4b", header.replace("v4a", "v4b"), None)]
        db.executemany(
            "INSERT INTO runs (id, created_at, source, state, header, config) "
            "VALUES (?, 't', 'run', 'complete', ?, ?)",
            runs,
        )
        assert db.execute("SELECT MAX(version) FROM schema_version").fetchone() == (4,)
    db.close()
    shown = evalh("runs", "show", "eval-v4a", "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["config"] == json.loads(text)
    assert list(json.loads(shown.output)) == ["evalId", "results", "config", "metadata"]  # report order
    with open_store() as store:
        assert "config" not in store.load_run("eval-v4b")  # stored without one, loaded without one
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM runs WHERE config IS NOT NULL").fetchone() == (0,)
        configs = dict(db.execute(_CONFIGS).fetchall())
        versions = [v for (v,) in db.execute("SELECT version FROM schema_version ORDER BY version")]
    db.close()
    assert configs == {"eval-v4a": text.encode("utf-8"), "eval-v4b": None}  # word for word
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 4)  # the evalh before this one
    with pytest.raises(StoreError, match="newer evalh"):
        open_store()


def test_the_config_is_stored_once_in_a_row_of_its_own(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    assert evalh("run", config, "--no-table").exit_code == 0
    with sqlite3.connect(store_path()) as db:
        ((header, in_runs),) = db.execute("SELECT header, config FROM runs").fetchall()
        ((stored,),) = db.execute("SELECT config FROM configs").fetchall()
    db.close()
    # finishing the run rewrites its runs row: a config there (or in its header) was read and rewritten
    assert in_runs is None and "config" not in json.loads(header) and "metadata" in json.loads(header)
    assert isinstance(stored, bytes)  # written in place (zeroblob, then blocks), never bound whole
    assert json.loads(stored)["tests"][0]["vars"] == {"q": "one?"}


def test_finishing_a_run_leaves_its_config_row_untouched(tmp_path: Path) -> None:
    with open_store() as store:
        recorder = store.start(
            "eval-abc-2026-01-01T00:00:00",
            {"evalId": "eval-abc-2026-01-01T00:00:00", "results": {"results": []}},
            config=EncodedConfig.of_text('{"tests": ["x"]}'),
            config_path=None,
            description=None,
        )
        with store.transaction() as db:
            db.execute(_NO_UPDATES_OF_CONFIGS)
        recorder.finish({"results": {"stats": {"durationMs": 5}}}, interrupted=False)  # aborted if it did
        assert recorder.working
        (run,) = store.list_runs()
        assert (run.state, run.duration_ms) == ("complete", 5)
        assert store.load_run(run.id)["config"] == {"tests": ["x"]}


def test_a_config_is_stored_as_written_and_deleted_with_its_run(tmp_path: Path) -> None:
    text = json.dumps({"tests": [{"vars": {"q": f"question {i} é ☃ \U0001f600"}} for i in range(3000)]})
    data = text.encode("utf-8")

    def blocks() -> Iterator[bytes]:
        return (data[start : start + 1000] for start in range(0, len(data), 1000))

    with open_store() as store:
        store.start(
            "eval-a-x", {}, config=EncodedConfig(len(data), blocks), config_path=None, description=None
        )
        store.start("eval-b-x", {}, config=EncodedConfig.of_text(text), config_path=None, description=None)
        with store.transaction() as db:
            stored = [blob for (blob,) in db.execute("SELECT config FROM configs ORDER BY run_seq")]
        assert stored == [data, data]  # every block in its place, multi-byte characters across blocks
        assert store.load_run("eval-a")["config"] == json.loads(text)
        store.delete("eval-a")
        store.prune(keep=0)
        with store.transaction() as db:
            assert db.execute("SELECT COUNT(*) FROM configs").fetchone() == (0,)


@pytest.mark.parametrize("size_off_by", [-1, 1])
def test_a_config_not_of_its_announced_size_is_not_stored(size_off_by: int) -> None:
    text = '{"tests": []}'
    config = EncodedConfig(len(text) + size_off_by, EncodedConfig.of_text(text).blocks)
    with open_store() as store:
        with pytest.raises(StoreError, match="bytes announced"):
            store.start("eval-a-x", {}, config=config, config_path=None, description=None)
        assert store.list_runs() == []  # the run's row went with its transaction


def test_two_processes_recording_at_once_do_not_corrupt_it(tmp_path: Path) -> None:
    config = echo_config(tmp_path, 250)  # three batches each, so the writers interleave
    command = [sys.executable, "-m", "evalh", "run", str(config), "--no-table", "--no-cache"]
    env = {**os.environ, "EVALH_HOME": str(store_path().parent)}
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
    ]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    # the whole stderr on failure: a warning here is a race worth reading in full
    assert [err.decode() for _, err in outputs if b"warning" in err] == []
    with open_store() as store:
        stored = store.list_runs()
        assert [(run.rows, run.passed, run.state) for run in stored] == [(250, 250, "complete")] * 2
        with store.transaction() as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for run in stored:
            assert sorted(row["vars"]["n"] for row in store.iter_rows(run.id)) == sorted(
                str(i) for i in range(250)
            )


_OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from evalh.store.database import connect
folder, me, width, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
failures = 0
for n in range(rounds):  # each round a new store, opened by every process as soon as all are ready
    (folder / f"ready-{n}-{me}").touch()
    while len(list(folder.glob(f"ready-{n}-*"))) < width:
        time.sleep(0.0005)
    try:
        connect(folder / f"store-{n}" / "runs.sqlite3").close()
    except Exception as error:  # reported, and the next round still met by every process
        print(f"round {n}: {error}", file=sys.stderr)
        failures += 1
sys.exit(1 if failures else 0)
"""


def test_processes_creating_the_store_at_once_all_open_it(tmp_path: Path) -> None:
    # switching a new store to WAL gets BUSY at once, without the busy handler, when another opener is
    # switching it too: one `evalh run` in three of two started together went unrecorded
    width, rounds = 4, 12
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AT_ONCE, str(tmp_path), str(i), str(width), str(rounds)],
            stderr=subprocess.PIPE,
        )
        for i in range(width)
    ]
    errors = [opener.communicate(timeout=300)[1].decode() for opener in openers]
    assert [opener.returncode for opener in openers] == [0] * width, errors
    for n in range(rounds):
        with sqlite3.connect(tmp_path / f"store-{n}" / "runs.sqlite3") as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert db.execute("SELECT MAX(version) FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        db.close()


def test_a_description_given_on_the_command_line_is_redacted_in_the_stored_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one?": "yes"})
    description = "nightly, see https://bot:hunter2-password@ci.example.com/job"
    for outputs in ([], ["-o", str(tmp_path / "out.json")]):  # the config text kept for a report or not
        assert evalh("run", config, "--no-table", "--description", description, *outputs).exit_code == 0
    with sqlite3.connect(store_path()) as db:
        stored = [json.loads(text) for (text,) in db.execute("SELECT config FROM configs ORDER BY run_seq")]
    db.close()
    assert [run["description"] for run in stored] == [
        "nightly, see https://bot:[REDACTED]@ci.example.com/job"
    ] * 2
    assert stored[1] == report(tmp_path / "out.json")["config"]


def test_a_run_an_older_evalh_stored_after_the_migration_keeps_its_config(tmp_path: Path) -> None:
    # an older evalh opened the store at version 4, a newer one migrated it, then the older one started
    # its run: its config went into runs.config, which every reader still finds
    open_store().close()
    header = json.dumps({"evalId": "eval-late", "results": {"version": 3, "results": []}})
    with sqlite3.connect(store_path()) as db:
        db.execute(
            "INSERT INTO runs (id, created_at, source, state, header, config) "
            "VALUES ('eval-late', 't', 'run', 'complete', ?, ?)",
            (header, json.dumps({"description": "from v4 é"})),
        )
    db.close()
    with open_store() as store:
        assert store.load_run("eval-late")["config"] == {"description": "from v4 é"}


def test_the_migration_to_version_5_reuses_the_pages_it_frees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _old_store("store_v2.sql")
    with monkeypatch.context() as older:
        older.setattr(schema, "SCHEMA_VERSION", 4)
        open_store().close()
    big = json.dumps({"tests": ["x" * 1000] * 500})  # 0.5 MB a run: 20 of them
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO runs (id, created_at, source, state, header, config) "
            "VALUES (?, 't', 'run', 'complete', '{}', ?)",
            [(f"eval-big-{i}", big) for i in range(20)],
        )
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (before,) = db.execute("PRAGMA page_count").fetchone()
    db.close()
    open_store().close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (after,) = db.execute("PRAGMA page_count").fetchone()
        (moved,) = db.execute("SELECT COUNT(*) FROM configs").fetchone()
    db.close()
    # copied all at once, the configs sat twice in the file (before the old copies were freed)
    assert moved >= 20 and after < before * 1.25


def test_the_stored_config_is_redacted_with_the_secrets_the_run_registered(tmp_path: Path) -> None:
    # an HTTP provider registers its `Bearer <key>` header when the run builds it, after the run started:
    # the config is stored when the run finishes, so the store and the JSON report hold one text
    secret = f"mid-run-{uuid.uuid4().hex}"  # the registry only grows: one no other test uses
    planned = sample_run()
    raw_config = {"description": "mid-run secret", "tests": [{"vars": {"q": f"uses {secret}"}}]}
    run = dataclasses.replace(planned, suite=dataclasses.replace(planned.suite, raw_config=raw_config))
    path = tmp_path / "report.json"
    with ConfigEcho(raw_config) as echo:
        with recording(run.suite, "2026-01-01T00:00:00+00:00", enabled=True, echo=echo) as record:
            register(secret)
            record.finish(run)
            eval_id = record.run_id
        assert eval_id is not None
        assert write_each_report(run, [path], eval_id=eval_id, echo=echo) == []
    with open_store() as store:
        stored = store.load_run(eval_id)["config"]
    assert stored == json.loads(path.read_text(encoding="utf-8"))["config"]
    assert stored["tests"][0]["vars"]["q"] == f"uses {MARKER}"


def test_a_recording_without_a_config_echo_still_finishes_its_run(tmp_path: Path) -> None:
    header = {"evalId": "eval-no-echo", "results": {"version": 3, "results": []}}
    with open_store() as store:
        recorder = store.start("eval-no-echo", header, config=None, config_path=None, description=None)
        Recording(recorder).finish(sample_run())
        (run,) = [run for run in store.list_runs() if run.id == "eval-no-echo"]
        loaded = store.load_run("eval-no-echo")
    assert run.state == "complete" and "config" not in loaded
