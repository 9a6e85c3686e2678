from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evalh.errors import ConfigError
from evalh.model import CacheMode, RunOptions
from evalh.runner.cache import DEFAULT_TTL_S, Cache, cache_dir, cache_mode, cache_ttl_s


def test_round_trip_and_namespaces(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite3")
    key = Cache.key({"id": "local", "model": "m"}, "hello")
    cache.put_many("embedding", {key: b"\x01\x02"})
    assert cache.get_many("embedding", [key, "missing"]) == {key: b"\x01\x02"}
    assert cache.get("completion", key) is None
    cache.close()
    reopened = Cache(tmp_path / "c.sqlite3")
    assert reopened.get("embedding", key) == b"\x01\x02"
    assert reopened.info()["entries"] == {"embedding": 1}
    assert reopened.clear() == 1
    assert reopened.get("embedding", key) is None


def test_keys_depend_on_identity_and_text_only() -> None:
    a = Cache.key({"id": "openai:embedding:x", "dimensions": 8}, "t")
    assert a == Cache.key({"dimensions": 8, "id": "openai:embedding:x"}, "t")
    assert a != Cache.key({"id": "openai:embedding:x", "dimensions": 16}, "t")
    assert a != Cache.key({"id": "openai:embedding:x", "dimensions": 8}, "u")
    assert len(a) == 64


def _key_as_written_before(identity: dict[str, Any], text: str) -> str:
    """The cache key as every cache file holds it: a changed key would orphan every entry."""
    text_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    canonical = json.dumps({"identity": identity, "text": text_hash}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    "identity",
    [
        {},
        {"provider": {"provider": "openai", "url": "http://127.0.0.1:1/v1/embeddings", "dimensions": None}},
        {"z": 1, "a": [1.5, True, None, {"y": 'é ☃ \\ "q"', "b": 2}], "text": "an identity's own text"},
        {"when": datetime(2026, 1, 2, tzinfo=UTC), "path": Path("/x/y"), "nested": {"deep": {"er": [[]]}}},
    ],
)
def test_a_keyer_gives_the_keys_written_before(identity: dict[str, Any]) -> None:
    texts = ["", "t", "é ☃ 𝄞", 'line\nbreak "quoted"', "\ud800 lone surrogate", "x" * 5000]
    key_of = Cache.keyer(identity)
    for text in texts:
        assert key_of(text) == Cache.key(identity, text) == _key_as_written_before(identity, text)


def test_disabled_cache_stores_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite3", enabled=False)
    cache.put("embedding", "k", b"v")
    assert cache.get("embedding", "k") is None
    assert not (tmp_path / "c.sqlite3").exists()


def test_many_keys_are_chunked(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite3")
    items = {f"k{i}": str(i).encode() for i in range(2500)}
    cache.put_many("tokens", items)
    assert cache.get_many("tokens", list(items)) == items


def test_cache_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"
    monkeypatch.delenv("EVALH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "evalh"


def fill(path: Path, entries: int = 200) -> None:
    cache = Cache(path)
    cache.put_many("embedding", {f"k{i}": b"v" * 500 for i in range(entries)})
    cache.close()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "evalh.cache"]


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_cache_is_moved_aside_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    path = tmp_path / "cache.sqlite3"
    if damage == "garbage":
        path.write_bytes(b"not a database" * 100)
    else:
        fill(path)
        path.write_bytes(path.read_bytes()[:5000])
    cache = Cache(path)
    assert cache.get("embedding", "k1") is None
    cache.put("embedding", "new", b"value")
    assert cache.get("embedding", "new") == b"value"
    assert cache.enabled
    moved = list(tmp_path.glob("cache.sqlite3.corrupt-*"))
    assert len(moved) == 1
    (warning,) = warnings_of(caplog)
    assert warning.startswith(f"evalh: warning: the cache {path} is damaged (")
    assert f"evalh moved it to {moved[0]}" in warning


def test_a_file_where_the_cache_directory_goes_means_no_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory goes", encoding="utf-8")
    cache = Cache(blocker / "cache.sqlite3")
    assert cache.get("embedding", "k") is None
    cache.put("embedding", "k", b"v")
    assert cache.get("embedding", "k") is None
    assert not cache.enabled
    assert warnings_of(caplog) == [
        f"evalh: warning: cannot use the cache {blocker / 'cache.sqlite3'} ({blocker} is a file, not a "
        "directory); this run goes on without a cache. Set EVALH_CACHE_DIR to a writable directory, or "
        "EVALH_CACHE_ENABLED=false to silence this."
    ]
    assert cache.clear() == 0
    assert cache.info()["entries"] == {}


def test_a_cache_that_is_a_directory_cannot_be_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "cache.sqlite3").mkdir()
    cache = Cache(tmp_path / "cache.sqlite3")
    cache.put("embedding", "k", b"v")
    assert cache.get("embedding", "k") is None
    (warning,) = warnings_of(caplog)
    assert "this run goes on without a cache" in warning


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` cannot be written, even by root (chattr +i), or the test is skipped."""
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode != 0:
        if os.geteuid() == 0:
            pytest.skip("cannot make a file read-only for root here (no chattr)")
        path.chmod(0o444)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
        path.chmod(0o644)


def test_a_read_only_cache_means_no_cache_for_this_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite3"
    fill(path)
    with read_only(path):
        cache = Cache(path)
        cache.put("embedding", "new", b"v")
        assert cache.get("embedding", "new") is None
        assert not cache.enabled
        (warning,) = warnings_of(caplog)
        assert warning.startswith(f"evalh: warning: cannot use the cache {path} (")
        cache.close()
    assert not list(tmp_path.glob("*.corrupt-*"))  # healthy but unwritable: left alone


def test_clear_deletes_a_damaged_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"garbage" * 300)
    (tmp_path / "cache.sqlite3-wal").write_bytes(b"more garbage")
    assert Cache(path).clear() == 0
    assert not path.exists() and not (tmp_path / "cache.sqlite3-wal").exists()


def test_an_entry_older_than_the_ttl_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    Cache(tmp_path / "c.sqlite3").put("completion", "k", b"old")
    expired = Cache(tmp_path / "c.sqlite3", ttl_s=0.001)
    time.sleep(0.01)
    assert expired.get("completion", "k") is None
    expired.put("completion", "k", b"new")
    assert Cache(tmp_path / "c.sqlite3").get("completion", "k") == b"new"


def test_a_refreshing_cache_reads_nothing_and_writes_what_it_is_given(tmp_path: Path) -> None:
    Cache(tmp_path / "c.sqlite3").put("completion", "k", b"old")
    refreshing = Cache(tmp_path / "c.sqlite3", read=False)
    assert refreshing.get("completion", "k") is None
    refreshing.put("completion", "k", b"new")
    assert Cache(tmp_path / "c.sqlite3").get("completion", "k") == b"new"


@pytest.mark.parametrize(
    ("environment", "options", "mode"),
    [
        ({}, RunOptions(), CacheMode.USE),
        ({}, RunOptions(cache=False), CacheMode.REFRESH),
        ({}, RunOptions(repeat=2), CacheMode.OFF),
        ({"EVALH_CACHE_ENABLED": "false"}, RunOptions(), CacheMode.OFF),
        ({"PROMPTFOO_CACHE_ENABLED": "0"}, RunOptions(cache=False), CacheMode.OFF),
        ({"EVALH_CACHE_ENABLED": "true"}, RunOptions(), CacheMode.USE),
    ],
)
def test_how_a_run_uses_the_cache(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], options: RunOptions, mode: CacheMode
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert cache_mode(options) is mode


def test_the_ttl_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_ttl_s() == DEFAULT_TTL_S == 14 * 24 * 3600
    monkeypatch.setenv("PROMPTFOO_CACHE_TTL", "60")
    assert cache_ttl_s() == 60
    monkeypatch.setenv("EVALH_CACHE_TTL", "3600")
    assert Cache.open().ttl_s == 3600
    monkeypatch.setenv("EVALH_CACHE_TTL", "a week")
    with pytest.raises(ConfigError) as raised:
        Cache.open()
    assert raised.value.render().startswith("EVALH_CACHE_TTL: must be a number of seconds above 0 (got")
