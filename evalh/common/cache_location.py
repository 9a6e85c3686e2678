"""Where evalh keeps its caches, whether the environment turned caching off, and how a cache file is
written: the one home of these, used by the completion cache (runner/cache.py), the TypeScript output
cache (runtimes/typescript.py), the schema shapes (config/shape_cache.py) and the parsed configs
(config/parse_cache.py).

The folder is ``$EVALH_CACHE_DIR``, else ``$XDG_CACHE_HOME/evalh``, else ``~/.cache/evalh``.
``EVALH_CACHE_ENABLED`` (or promptfoo's ``PROMPTFOO_CACHE_ENABLED``) set to ``false``/``0``/``no``/``off``
turns caching off. Both are read through the run's environment.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from evalh.common.environment import getenv

__all__ = ["ENABLED_VARS", "cache_dir", "cache_enabled", "first_setting", "write_cache_file"]

# evalh's name first; promptfoo's is honoured so a migrated CI job keeps its setting
ENABLED_VARS = ("EVALH_CACHE_ENABLED", "PROMPTFOO_CACHE_ENABLED")
_FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def first_setting(names: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``names`` set to a non-blank value, with that value."""
    for name in names:
        value = getenv(name, "").strip()
        if value:
            return name, value
    return None


def cache_enabled() -> bool:
    """False when the environment turns caching off (``EVALH_CACHE_ENABLED=false``)."""
    enabled = first_setting(ENABLED_VARS)
    return enabled is None or enabled[1].lower() not in _FALSE_WORDS


def cache_dir() -> Path:
    configured = getenv("EVALH_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = getenv("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalh"


def write_cache_file(path: Path, chunks: Iterable[bytes], prefix: str) -> None:
    """Write a cache file of ``chunks`` end to end (not joined first: a 14 MB entry is not held twice),
    atomically (a temporary file named ``prefix``..., then a rename), readable by this user only; quietly
    not at all when the folder is not writable (read again next time, as without the file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.writelines(chunks)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return
