"""Large configs' data kept between runs, keyed by their text's digest (as Python keeps bytecode).

Reading a 5,000-test suite (2.4 MB) with yaml_rs, then settling its data (config/fastyaml.py), takes
about 0.2 s of CPU on every run (libyaml's events, for a text yaml_rs may not read, several times that);
the same data read back with ``marshal`` (which keeps the interned keys and the one copy of each repeated
text) takes about 0.03 s. A text of at least MIN_CHARS whose data the caller's reader gives (not an
error, not UNSURE) is kept in ``<cache folder>/parsed/<sha256 of the text>``, up to MAX_BYTES of data;
any change of the text reads it again. The file's header names evalh's, yaml_rs's and Python's versions and a
digest of the reader's own source (the modules that decide what a text reads as, so a change of them
between two releases is not hidden by old entries): another reader never reuses an entry. Only the last
MAX_FILES texts are kept.

A config holding anything the secrets module redacts (a secret-looking key's value, an ``env:`` map, a
URL's credentials, a registered secret) is never kept: its data would put the secret in the cache
folder. As for Python's bytecode cache, the folder is trusted: files are written by this user only
(mode 0600); a corrupt or foreign file is ignored and rewritten. ``EVALH_CACHE_ENABLED=false`` turns it
off; ``evalh cache clear`` deletes it.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml_rs

from evalh.common.cache_location import cache_dir, cache_enabled, write_cache_file
from evalh.common.version import __version__
from evalh.config import fastyaml, plainyaml, safeload
from evalh.config.fastyaml import UNSURE
from evalh.secrets import redact_config

__all__ = ["FOLDER", "MAX_BYTES", "MAX_FILES", "MIN_CHARS", "clear_parsed", "read_cached"]

FOLDER = "parsed"
MIN_CHARS = 100_000  # about 200 tests: a smaller text reads in a few milliseconds, and is not kept
MAX_FILES = 8  # texts kept (one per large config, and its last edits)
MAX_BYTES = 64 * 1024 * 1024  # the data of 50,000 tests takes about 14 MB


@functools.cache
def _header(reader_module: str) -> bytes | None:
    """What an entry starts with: the reader it was read by, its module ``reader_module`` and the YAML
    modules (None when their source cannot be read, as in a frozen application: then nothing is kept)."""
    source = hashlib.sha256()
    for module in (fastyaml, plainyaml, safeload, sys.modules[__name__], sys.modules[reader_module]):
        try:
            source.update(Path(str(module.__file__)).read_bytes())
        except OSError:
            return None
    versions = "\0".join(
        (__version__, f"yaml_rs {yaml_rs.__version__}", _pyyaml_version(), sys.version, source.hexdigest())
    )
    return b"evalh-parsed\0" + versions.encode() + b"\0"


def _pyyaml_version() -> str:
    """PyYAML's version and its libyaml's (the reader of texts yaml_rs does not take): an upgrade of
    either may read a text differently, so it retires the entries read before it."""
    import yaml

    try:
        from yaml import _yaml

        libyaml = str(_yaml.get_version_string())
    except (ImportError, AttributeError):
        libyaml = "none"
    return f"PyYAML {yaml.__version__} libyaml {libyaml}"


def read_cached(text: str, read: Callable[[str], Any]) -> Any:
    """``read(text)`` (data, or UNSURE), from the cache when it holds this very text. ``read`` must be
    a function of the text alone, as evalh's YAML readers are (config/locate.py)."""
    header = _header(read.__module__) if len(text) >= MIN_CHARS and cache_enabled() else None
    if header is None:
        return read(text)
    path = cache_dir() / FOLDER / hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    kept = _read(path, header)
    if kept is not UNSURE:
        return kept
    data = read(text)
    if type(data) in (dict, list) and redact_config(data) is data:  # a config, with nothing secret in it
        _keep(path, header, data)
    return data


def _keep(path: Path, header: bytes, data: Any) -> None:
    try:
        blob = marshal.dumps(data)  # before anything changes the data
    except ValueError:  # a value marshal cannot write (none of evalh's readers makes one)
        return
    if len(blob) <= MAX_BYTES:
        write_cache_file(path, [header, blob], prefix=".parsed-")
        _forget_older(path.parent)


def _read(path: Path, header: bytes) -> Any:
    """The data kept in ``path``, or UNSURE (no file, another reader's, corrupt)."""
    try:
        blob = path.read_bytes()
    except OSError:
        return UNSURE
    if not blob.startswith(header):
        return UNSURE
    try:
        data = marshal.loads(memoryview(blob)[len(header) :])
    except (ValueError, EOFError, TypeError):
        return UNSURE
    return data if type(data) is dict or type(data) is list else UNSURE


def _forget_older(folder: Path) -> None:
    """Delete all but the MAX_FILES newest files (quietly: another process may be at it too)."""
    try:
        kept = [path for path in folder.iterdir() if not path.name.startswith(".")]  # not one being written
        files = sorted(kept, key=lambda path: path.stat().st_mtime_ns, reverse=True)
        for path in files[MAX_FILES:]:
            path.unlink(missing_ok=True)
    except OSError:
        return


def clear_parsed() -> bool:
    """Delete the kept data (``evalh cache clear``); True when there was some."""
    folder = cache_dir() / FOLDER
    if not folder.is_dir():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True
