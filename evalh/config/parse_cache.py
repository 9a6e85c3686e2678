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
folder. The load's own config is asked after its secrets are registered (:func:`deferred_keeping`), so
that the load's one redaction walk of the config answers (secrets.holds_nothing_to_redact) rather than a
walk of its own before registration. As for Python's bytecode cache, the folder is trusted: files are
written by this user only (mode 0600); a corrupt or foreign file is ignored and rewritten.
``EVALH_CACHE_ENABLED=false`` turns it off; ``evalh cache clear`` deletes it.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import yaml_rs

from evalh.common.cache_location import cache_dir, cache_enabled, write_cache_file
from evalh.common.version import __version__
from evalh.config import fastyaml, plainyaml, safeload
from evalh.config.fastyaml import UNSURE
from evalh.secrets import holds_nothing_to_redact

__all__ = [
    "FOLDER",
    "MAX_BYTES",
    "MAX_FILES",
    "MIN_CHARS",
    "DeferredKeeps",
    "clear_parsed",
    "deferred_keeping",
    "read_cached",
]

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
    if type(data) in (dict, list):  # a config (kept when nothing secret is in it)
        deferred = _DEFERRED.get()
        if deferred is not None:
            deferred.add(path, header, data)
        elif holds_nothing_to_redact(data):
            _write(path, header, _blob(data))
    return data


class DeferredKeeps:
    """Configs read (not found in the cache) within :func:`deferred_keeping`, their data written out
    already (before anything changes it), kept by :meth:`settle` once the load knows their secrets."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, bytes, Any, bytes | None]] = []

    def add(self, path: Path, header: bytes, data: Any) -> None:
        self._pending.append((path, header, data, _blob(data)))

    def settle(self) -> None:
        """Keep each config read that holds nothing to redact: call it after the load registered the
        config's secrets (then its one walk answers for the config it walks)."""
        pending, self._pending = self._pending, []
        for path, header, data, blob in pending:
            if blob is not None and holds_nothing_to_redact(data):
                _write(path, header, blob)


_DEFERRED: ContextVar[DeferredKeeps | None] = ContextVar("evalh_parse_cache_deferred", default=None)


@contextmanager
def deferred_keeping() -> Iterator[DeferredKeeps]:
    """Within the block, a config read is not kept at once: the caller settles the returned keeps
    (those not settled are dropped: a load that stopped before registering its secrets keeps nothing)."""
    keeps = DeferredKeeps()
    token = _DEFERRED.set(keeps)
    try:
        yield keeps
    finally:
        _DEFERRED.reset(token)


def _blob(data: Any) -> bytes | None:
    """``data`` as marshal writes it (None: too large, or a value marshal cannot write, which none of
    evalh's readers makes)."""
    try:
        blob = marshal.dumps(data)
    except ValueError:
        return None
    return blob if len(blob) <= MAX_BYTES else None


def _write(path: Path, header: bytes, blob: bytes | None) -> None:
    if blob is not None:
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
