"""Rows encoded once as they finish, and the JSON report written row by row around them: the bytes are
those of the whole document dumped at once (orjson's compact form, ``json.dumps``' indented one), whichever
order the rows finished in."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
import re
import resource
import signal
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalh.model import RunRecord
from evalh.reports.json import MEMO_LIMIT, new_memo, to_promptfoo_json
from evalh.reports.serialize import compact, dumps, encode_json
from evalh.reports.streamed import ConfigEcho, EncodedConfig, ReportFrame, RowSpool, encode_row, row_text
from evalh.reports.writers import PRETTY_JSON_MAX_ROWS, WRITE_BLOCK, write_each_report
from evalh.secrets import MARKER, RedactedConfig, redact_bytes, register
from tests.reports.sample import NASTY_OUTPUT, large_run, sample_run, with_results

_EXPORTED = re.compile(rb'"exportedAt": ?"[^"]*"')


def _whole_document_bytes(run: RunRecord, *, indent: int | None) -> bytes:
    """What the JSON report was before it was streamed: the whole document, dumped at once."""
    document = to_promptfoo_json(run, eval_id="eval-abc-2025-01-01T00:00:00")
    text = (compact(document) if indent is None else dumps(document, indent=indent)) + "\n"
    return redact_bytes(encode_json(text))


def _written(run: RunRecord, path: Path, spool: RowSpool | None = None) -> bytes:
    assert write_each_report(run, [path], eval_id="eval-abc-2025-01-01T00:00:00", spool=spool) == []
    return path.read_bytes()


def _same_bytes(written: bytes, expected: bytes) -> None:
    assert _EXPORTED.sub(b"", written) == _EXPORTED.sub(b"", expected)


def _odd_run() -> RunRecord:
    """The sample run with NaN, numpy values and the lone surrogate of its outputs."""
    run = sample_run()
    rows = list(run.results)
    graded = rows[0].assertions[1]
    odd = dataclasses.replace(graded, details={"similarity": np.float32(0.5), "vector": np.arange(3)})
    rows[0] = dataclasses.replace(rows[0], score=math.nan, assertions=(rows[0].assertions[0], odd))
    return with_results(run, rows)


def test_an_indented_report_is_the_whole_document_byte_for_byte(tmp_path: Path) -> None:
    run = _odd_run()
    assert len(run.results) <= PRETTY_JSON_MAX_ROWS
    written = _written(run, tmp_path / "r.json")
    _same_bytes(written, _whole_document_bytes(run, indent=2))
    assert NASTY_OUTPUT in [row["response"]["output"] for row in json.loads(written)["results"]["results"]]


def test_a_compact_report_is_the_whole_document_byte_for_byte(tmp_path: Path) -> None:
    run = large_run(PRETTY_JSON_MAX_ROWS + 1, 3)
    written = _written(run, tmp_path / "r.json")
    assert b'\n  "evalId"' not in written  # compact beyond the limit
    assert len(written) > 2 * WRITE_BLOCK  # written in several blocks of rows joined
    _same_bytes(written, _whole_document_bytes(run, indent=None))


def test_rows_spooled_out_of_order_are_written_in_the_runs_order(tmp_path: Path) -> None:
    run = large_run(PRETTY_JSON_MAX_ROWS + 5, 2)
    with RowSpool() as spool:
        for row in reversed(run.results):  # the order a run may finish them in
            spool.add(row)
        written = _written(run, tmp_path / "r.json", spool)
        jsonl = tmp_path / "r.jsonl"
        assert write_each_report(run, [jsonl], spool=spool) == []
    _same_bytes(written, _whole_document_bytes(run, indent=None))
    lines = jsonl.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [row.id for row in run.results]


def test_rows_added_after_a_read_go_after_the_earlier_rows() -> None:
    rows = large_run(6, 2).results
    with RowSpool() as spool:
        for row in rows[:3]:
            spool.add(row)
        assert spool.text_of(rows[0]) == encode_row(rows[0]).text  # a read moves the file's position
        for row in rows[3:]:
            spool.add(row)
        assert spool.text_of(rows[4]) == encode_row(rows[4]).text
        spool.add(rows[5])  # again after a read: it replaces nothing written before
        assert list(spool.texts(rows)) == [encode_row(row).text for row in rows]


def test_a_row_the_spool_never_saw_is_encoded_when_written(tmp_path: Path) -> None:
    run = _odd_run()
    with RowSpool() as spool:
        spool.add(run.results[1])  # an earlier run's rows (--retry-errors) were never spooled
        written = _written(run, tmp_path / "r.json", spool)
    _same_bytes(written, _whole_document_bytes(run, indent=2))


def test_a_run_without_rows_writes_an_empty_list(tmp_path: Path) -> None:
    run = with_results(large_run(3, 1), [])
    frame = ReportFrame(run, eval_id="eval-abc-2025-01-01T00:00:00")
    compact = "".join(frame.chunks([])).encode("utf-8") + b"\n"
    _same_bytes(compact, _whole_document_bytes(run, indent=None))
    assert json.loads(compact)["results"]["results"] == []
    _same_bytes(_written(run, tmp_path / "r.json"), _whole_document_bytes(run, indent=2))


def test_the_encoded_text_is_the_rows_strict_json(tmp_path: Path) -> None:
    row = _odd_run().results[0]
    encoded = encode_row(row)

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    assert json.loads(encoded.text, parse_constant=refuse)["score"] is None
    assert encoded.document["id"] == row.id
    assert "\n" not in encoded.text  # one JSONL line


@pytest.mark.parametrize("closed", [False, True])
def test_a_closed_spool_still_gives_every_row(tmp_path: Path, closed: bool) -> None:
    run = sample_run()
    spool = RowSpool()
    for row in run.results:
        spool.add(row)
    if closed:
        spool.close()
        spool.close()  # closing again does nothing
    texts = list(spool.texts(run.results))
    assert [json.loads(text)["id"] for text in texts] == [row.id for row in run.results]
    spool.close()


def test_an_interrupted_run_streams_a_valid_report_of_its_finished_rows(tmp_path: Path) -> None:
    planned = large_run(3003, 2)  # 2,002 finished: a compact report, written row by row
    finished = [row for position, row in enumerate(planned.results) if position % 3 != 2]
    run = dataclasses.replace(
        with_results(planned, finished),
        interrupted=True,
        interrupted_by="SIGTERM",
        not_run=len(planned.results) - len(finished),
    )
    with RowSpool() as spool:
        for row in finished[::-1]:
            spool.add(row)
        written = _written(run, tmp_path / "r.json", spool)
    assert b'\n  "evalId"' not in written
    document = json.loads(written)
    assert [row["id"] for row in document["results"]["results"]] == [row.id for row in finished]
    block = document["results"]["evalh"]
    assert (block["interrupted"], block["interruptedBy"], block["notRun"]) == (True, "SIGTERM", 1001)
    assert document["results"]["stats"]["successes"] + document["results"]["stats"]["failures"] == 2002


def test_a_streaming_memo_keeps_only_the_recent_conversions() -> None:
    memo = new_memo()
    objects = [object() for _ in range(MEMO_LIMIT + 1)]
    builds: list[int] = []

    def convert(index: int) -> str:
        return memo.get(objects[index], lambda: builds.append(index) or f"converted {index}")  # type: ignore[no-any-return]

    for index in range(len(objects)):
        convert(index)
    assert convert(MEMO_LIMIT) == f"converted {MEMO_LIMIT}" and builds.count(MEMO_LIMIT) == 1  # kept
    assert convert(0) == "converted 0" and builds.count(0) == 2  # the oldest was dropped, made again
    rows = large_run(800, 5).results  # more conversions than the limit: rows are still converted in full
    shared = new_memo()
    assert [encode_row(row, shared).text for row in rows] == [encode_row(row).text for row in rows]


def test_the_config_is_written_piece_by_piece_with_the_same_redaction(tmp_path: Path) -> None:
    tests = [
        {"vars": {"q": f"question {i}", "url": "https://user:pw@example.com/x?sig=abc"}, "assert": ["x"]}
        for i in range(3)
    ]
    raw_config = {
        "description": "many tests",
        "providers": [{"id": "openai:gpt-4o", "config": {"apiKey": "sk-live-1234567890"}}, "echo"],
        "tests": tests,
        "apiKey": ["sk-one", "sk-two"],  # a secret-named key holding a list: redacted whole
        "env": {"TOKEN": "t0k3n-value"},
        "tags": ("a", "b"),
        "threshold": math.nan,
        "empty": [],
        7: "a key that is not a string",
    }
    planned = large_run(PRETTY_JSON_MAX_ROWS + 1, 1)
    run = dataclasses.replace(planned, suite=dataclasses.replace(planned.suite, raw_config=raw_config))
    written = _written(run, tmp_path / "r.json")
    _same_bytes(written, _whole_document_bytes(run, indent=None))
    config = json.loads(written)["config"]
    assert (config["apiKey"], config["env"]) == ("[REDACTED]", {"TOKEN": "[REDACTED]"})
    assert config["threshold"] is None
    assert "sk-live" not in written.decode() and config["tests"][2]["vars"]["q"] == "question 2"


def test_without_a_temporary_file_the_rows_are_encoded_when_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))  # TemporaryFile fails there
    run = large_run(PRETTY_JSON_MAX_ROWS + 1, 2)
    with RowSpool() as spool:
        texts = [spool.add(row).text for row in run.results]
        written = _written(run, tmp_path / "r.json", spool)
    assert texts == [encode_row(row).text for row in run.results]
    _same_bytes(written, _whole_document_bytes(run, indent=None))


def _stored(encoded: EncodedConfig) -> str:
    """The text the store writes of ``encoded``: its blocks, which add up to its size."""
    data = b"".join(encoded.blocks())
    assert len(data) == encoded.size
    return data.decode("utf-8")


def test_the_config_text_the_store_took_is_the_one_the_report_echoes(tmp_path: Path) -> None:
    raw_config = {
        "providers": [{"id": "openai:gpt-4o", "config": {"apiKey": "sk-live-1234567890"}}],
        "tests": [{"vars": {"q": "question é", "url": "https://user:pw@example.com/x"}} for _ in range(3)],
        "env": {"TOKEN": "t0k3n-value"},
    }
    planned = large_run(PRETTY_JSON_MAX_ROWS + 1, 1)
    run = dataclasses.replace(planned, suite=dataclasses.replace(planned.suite, raw_config=raw_config))
    expected = _written(run, tmp_path / "alone.json")
    with ConfigEcho(raw_config) as echo:
        with echo.encoded() as encoded:
            stored = _stored(encoded)
            assert _stored(encoded) == stored  # read again from the start (the store retries a taken id)
        path = tmp_path / "shared.json"
        assert write_each_report(run, [path], eval_id="eval-abc-2025-01-01T00:00:00", echo=echo) == []
    _same_bytes(path.read_bytes(), expected)
    assert json.loads(stored) == json.loads(expected)["config"]
    assert "sk-live" not in stored and "pw@" not in stored and "t0k3n" not in stored


def test_a_secret_registered_after_the_config_text_was_made_is_redacted_from_the_report() -> None:
    secret = f"late-secret-{uuid.uuid4().hex}"  # the registry only grows: one no other test uses
    raw_config = {"tests": [{"vars": {"q": f"uses {secret}"}}]}
    with ConfigEcho(raw_config) as echo:
        with echo.encoded() as encoded:
            assert secret in _stored(encoded)  # not yet registered when the store took it
        register(secret)
        echoed = "".join(echo.chunks())
    assert secret not in echoed and json.loads(echoed)["tests"][0]["vars"]["q"] == f"uses {MARKER}"


def test_a_config_text_not_kept_is_the_config_as_loaded_and_encoded_again_for_a_report() -> None:
    raw_config = {
        "providers": [{"id": "x", "config": {"apiKey": "sk-live-1234567890"}}],  # as no load leaves it
        "tests": [{"vars": {"q": f"question {i} é \udcff"}, "threshold": math.inf} for i in range(3)],
        "tags": ("a", "b"),
        "empty": [],
        "env": {},
    }
    for config in (raw_config, {**raw_config, 7: "a key JSON spells its own way", True: "so is this"}):
        with ConfigEcho(config, keep=False) as echo:
            with echo.encoded() as encoded:
                assert _stored(encoded) == row_text(config)  # the walk is the report's (see ConfigEcho)
            # no JSON report was to read it back: the report's text is its own walk
            assert json.loads("".join(echo.chunks()))["providers"][0]["config"]["apiKey"] == MARKER


def test_without_a_temporary_file_the_store_takes_the_whole_config_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw_config = {"tests": [{"vars": {"q": f"question {i} é"}} for i in range(3)], "env": {"K": "v"}}
    expected = "".join(ConfigEcho(raw_config).chunks())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))  # TemporaryFile fails there
    for keep in (True, False):
        with ConfigEcho(raw_config, keep=keep) as echo:
            with echo.encoded() as encoded:
                assert _stored(encoded) == (expected if keep else row_text(raw_config))
            assert "".join(echo.chunks()) == expected


@contextlib.contextmanager
def _files_limited_to(size: int) -> Iterator[None]:
    """A disk that fills after ``size`` bytes of any one file (a write past it: OSError EFBIG)."""
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # not killed past the limit: an error
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_on_a_full_disk_the_store_takes_the_whole_config_text() -> None:
    raw_config = {"tests": [{"vars": {"q": f"question {i} é " * 20}} for i in range(4000)]}  # 1.4 MB
    expected = "".join(ConfigEcho(raw_config).chunks())
    with ConfigEcho(raw_config) as echo:
        with _files_limited_to(1 << 20), echo.encoded() as encoded:
            stored = _stored(encoded)
        assert stored == expected
        assert "".join(echo.chunks()) == expected  # encoded again: nothing was kept


def _random_config(rng: random.Random, depth: int = 0) -> Any:
    """A config-like value: secret-named keys, ``env`` maps, URLs with passwords, the late secret."""
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, 0, 1.5, -3, math.inf])
    if kind in (1, 2, 3, 4):
        return rng.choice(_TEXTS)
    if kind in (5, 6):
        keys = rng.sample(_KEYS, rng.randrange(1, 5))
        return {key: _random_config(rng, depth + 1) for key in keys}
    return [_random_config(rng, depth + 1) for _ in range(rng.randrange(0, 4))]


_LATE = f'läte-"secret"-{uuid.uuid4().hex}'  # registered mid-run, after the load redacted the config
_KEYS = ["q", "apiKey", "env", "headers", "Authorization", "tests", "vars", "url", "é", "tokenLimit", "cfg"]
_TEXTS = [
    "",
    "plain",
    "question é",
    f"uses {_LATE}",
    "https://user:pw-123456@example.com/x?sig=abc&q=1",
    "see http://example.com/",
    "Bearer abc",
    "\u2028 line",
]


def test_a_config_the_load_redacted_is_echoed_as_the_walk_echoes_it() -> None:
    # Suite.raw_config is redact_config's copy: taken as redacted, only the values registered since
    # are replaced, in its text; the store's and the report's texts are those of a second walk
    rng = random.Random(29)
    configs = [{key: _random_config(rng) for key in rng.sample(_KEYS, 4)} for _ in range(150)]
    configs.append({"tests": [{"vars": {"q": f"uses {_LATE}"}}], "env": {"K": "v"}})
    loaded = [RedactedConfig.of(raw) for raw in configs]
    for config in loaded:
        with (
            ConfigEcho(config) as taken,
            ConfigEcho(dict(config)) as walked,
            taken.encoded() as fast,
            walked.encoded() as slow,
        ):
            assert _stored(fast) == _stored(slow)
    register(_LATE)
    for config in loaded[-30:]:  # loaded before, echoed after
        for keep in (True, False):
            with ConfigEcho(config, keep=keep) as taken, ConfigEcho(dict(config)) as walked:
                with taken.encoded() as fast, walked.encoded() as slow:
                    assert _stored(fast) == _stored(slow)
                assert "".join(taken.chunks()) == "".join(walked.chunks())
    echoed = "".join(ConfigEcho(loaded[-1]).chunks())
    assert "secret" not in echoed and json.loads(echoed)["tests"][0]["vars"]["q"] == f"uses {MARKER}"


def test_a_config_taken_as_redacted_is_echoed_again_after_a_late_secret() -> None:
    late = f"late-secret-{uuid.uuid4().hex}"
    config = RedactedConfig({"tests": [{"vars": {"q": f"uses {late}"}}]})
    with ConfigEcho(config) as echo:
        with echo.encoded() as encoded:
            assert late in _stored(encoded)  # not yet registered when the store took it
        register(late)
        echoed = "".join(echo.chunks())
    assert late not in echoed and json.loads(echoed)["tests"][0]["vars"]["q"] == f"uses {MARKER}"
