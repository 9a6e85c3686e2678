"""Large configs' data kept between runs (config/parse_cache.py): read back equal, with one copy of each
repeated key and text, never stale, never holding a secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config import parse_cache
from evalh.config.fastyaml import UNSURE, read_fast
from evalh.config.locate import _parse_with_libyaml, _read_plain
from evalh.config.parse_cache import FOLDER, MIN_CHARS, read_cached


def _suite(tests: int, extra: str = "") -> str:
    body = "".join(
        f"  - description: test {n}\n    vars:\n      answer: The robot number {n} came.\n"
        f"    assert:\n      - type: contains\n        value: robot\n      - type: icontains\n"
        f"        value: 'NUMBER {n}'\n"
        for n in range(tests)
    )
    head = (
        "description: kept\nprompts:\n  - '{{answer}}'\nproviders:\n  - echo\n"  # blocks: yaml_rs reads them
    )
    text = f"{head}{extra}tests:\n{body}"
    assert len(text) >= MIN_CHARS
    return text


_TEXT = _suite(800)


def _read_cached(text: str) -> Any:
    return read_cached(text, _read_plain)  # as config/locate.py reads a config


def _kept(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "evalh-cache" / FOLDER
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_large_config_is_read_back_equal_with_its_keys_and_texts_shared_once(tmp_path: Path) -> None:
    first = _read_cached(_TEXT)
    assert len(_kept(tmp_path)) == 1
    second = _read_cached(_TEXT)
    assert second == first == read_fast(_TEXT) and second is not first
    one, other = second["tests"][0]["assert"][0], second["tests"][1]["assert"][0]
    assert next(iter(one)) is next(iter(other)) is sys.intern("type") and one["value"] is other["value"]


def test_a_changed_text_is_read_again(tmp_path: Path) -> None:
    _read_cached(_TEXT)
    changed = _TEXT.replace("test 7\n", "test seven\n")
    assert _read_cached(changed)["tests"][7]["description"] == "test seven"
    assert len(_kept(tmp_path)) == 2


def test_an_entry_read_under_another_pyyaml_or_libyaml_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # libyaml reads the texts yaml_rs does not take: an upgrade of it (or of PyYAML) may read a text
    # differently, so it retires the entries read before it (the review)
    import yaml

    assert _read_cached(_TEXT)["description"] == "kept"
    parse_cache._header.cache_clear()
    monkeypatch.setattr(yaml, "__version__", "99.0")
    read_again: list[str] = []

    def reader(text: str) -> Any:
        read_again.append(text)
        return _read_plain(text)

    reader.__module__ = _read_plain.__module__
    try:
        assert read_cached(_TEXT, reader)["description"] == "kept"
    finally:
        parse_cache._header.cache_clear()
    assert read_again == [_TEXT]


def test_a_corrupt_or_foreign_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    _read_cached(_TEXT)
    (path,) = _kept(tmp_path)
    for junk in (
        b"",
        b"\x00junk",
        (parse_cache._header(_read_plain.__module__) or b"") + b"\xff\x00",
        b"evalh-parsed\x000.0.1\x00" + path.read_bytes(),
    ):
        path.write_bytes(junk)
        assert _read_cached(_TEXT) == read_fast(_TEXT)
        assert (
            path.read_bytes().startswith(parse_cache._header(_read_plain.__module__) or b"?")
            and len(path.read_bytes()) > 1000
        )


# What a config may hold that the secrets module redacts (an env: map, a secret-named key, a URL password),
# added to a config large enough to be kept: tests/secrets/test_config_walk.py loads the same ones.
SECRET_HOLDING_EXTRAS = [
    "env:\n  PLAIN_NAME: some-value-1234\n",
    "defaultTest:\n  options:\n    provider:\n      id: echo\n      config:\n"
    "        apiKey: sk-a-planted-key-123\n",
    "defaultTest:\n  vars:\n    site: https://user:planted-pass@example.com/x\n",
]


@pytest.mark.parametrize("extra", SECRET_HOLDING_EXTRAS)
def test_a_config_holding_a_secret_is_never_kept(tmp_path: Path, extra: str) -> None:
    text = _suite(800, extra)
    assert _read_cached(text) == read_fast(text)
    assert _kept(tmp_path) == []


def test_small_texts_and_a_cache_turned_off_keep_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _read_cached(_suite(800)[: MIN_CHARS // 2].rsplit("\n  - ", 1)[0] + "\n")
    assert _kept(tmp_path) == []
    monkeypatch.setenv("EVALH_CACHE_ENABLED", "false")
    _read_cached(_TEXT)
    assert _kept(tmp_path) == []


def test_only_the_newest_texts_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_cache, "MAX_FILES", 2)
    for n in range(4):
        _read_cached(_TEXT.replace("description: kept", f"description: kept {n}"))
        os.utime(_kept(tmp_path)[0].parent, None)
    kept = _kept(tmp_path)
    assert len(kept) == 2
    assert _read_cached(_TEXT.replace("description: kept", "description: kept 3"))["description"] == "kept 3"


def _validate(config: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "EVALH_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "evalh", "validate", "-c", str(config)]
    return subprocess.run(command, capture_output=True, text=True, env=environment)


def test_a_problem_in_a_kept_config_is_located_as_before(tmp_path: Path) -> None:
    config, cache = tmp_path / "big.yaml", tmp_path / "cache"
    config.write_text(
        _TEXT.replace("        value: 'NUMBER 700'\n", "        value: 'NUMBER 700'\n        weight: -1\n")
    )
    cold, warm = _validate(config, cache), _validate(config, cache)
    assert len(list((cache / FOLDER).iterdir())) == 1
    assert (
        cold.returncode == warm.returncode == 2 and warm.stderr == cold.stderr and warm.stdout == cold.stdout
    )
    assert (
        f"{config}:" in cold.stderr + cold.stdout
        and "tests[700].assert[1].weight" in cold.stderr + cold.stdout
    )


def test_cache_clear_deletes_the_kept_data(tmp_path: Path) -> None:
    _read_cached(_TEXT)
    cleared = CliRunner().invoke(app, ["cache", "clear"])
    assert cleared.exit_code == 0 and "Deleted the parsed data of large configs" in cleared.output
    assert _kept(tmp_path) == []


def test_a_large_config_only_libyaml_reads_is_kept_too(tmp_path: Path) -> None:
    # flow collections: yaml_rs is not trusted with them, libyaml's events read them
    text = _TEXT.replace("providers:\n  - echo\n", "providers: [echo]\n")
    assert read_fast(text) is UNSURE
    first = _read_cached(text)
    assert len(_kept(tmp_path)) == 1
    second = _read_cached(text)
    assert second == first == _parse_with_libyaml(text, "x.yaml").data and second is not first
