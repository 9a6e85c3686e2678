from __future__ import annotations

from pathlib import Path

import pytest

from evalh.errors import EvalhError
from evalh.runner.cache import Cache, cache_dir


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


def test_an_unusable_cache_is_an_evalh_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory goes", encoding="utf-8")
    cache = Cache(blocker / "cache.sqlite3")
    with pytest.raises(EvalhError, match=r"file/cache\.sqlite3: cannot use the cache: .*--no-cache"):
        cache.get("embedding", "k")
    corrupt = tmp_path / "corrupt.sqlite3"
    corrupt.write_bytes(b"not a database" * 100)
    with pytest.raises(EvalhError, match=r"corrupt\.sqlite3: cannot use the cache"):
        Cache(corrupt).info()
