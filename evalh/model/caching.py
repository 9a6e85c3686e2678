"""How a run used the cache, and the one sentence every report says about it.

A re-run against an app that changed (same provider id and URL) grades the old cached answers; a "cache
hits" figure in the usage table was the only sign. So every face of a run (console, JSON, Markdown,
viewer, Python API, pytest) says how many of its outputs came from the cache, in the words of
:meth:`CacheShare.sentence`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["CacheMode", "CacheShare"]


class CacheMode(enum.Enum):
    """What a run does with the cache."""

    USE = "use"  # read it, and write what was fetched
    REFRESH = "refresh"  # --no-cache: read nothing, write every fresh answer for the next run
    OFF = "off"  # neither (--repeat above 1, EVALH_CACHE_ENABLED=false)


class _Row(Protocol):
    @property
    def cached(self) -> bool: ...

    @property
    def asked_provider(self) -> bool: ...


@dataclass(frozen=True)
class CacheShare:
    """``from_cache`` of the run's ``outputs`` (rows whose output a provider was asked for: recorded
    outputs are not counted) came from the cache; ``mode`` None when unknown (a merged report)."""

    outputs: int
    from_cache: int
    mode: CacheMode | None = None

    @classmethod
    def of_rows(cls, rows: Iterable[_Row], mode: CacheMode | None) -> CacheShare:
        outputs = from_cache = 0
        for row in rows:
            if row.asked_provider:
                outputs += 1
                from_cache += bool(row.cached)
        return cls(outputs, from_cache, mode)

    def sentence(self, flag: str = "--no-cache") -> str | None:
        """ "19 of 19 outputs from the cache; --no-cache calls the providers", or None when no output
        was asked of a provider (the cache played no part in the outputs). ``flag``: how the caller's
        users turn the cache's reading off (``cache=False`` from Python)."""
        if self.outputs == 0:
            return None
        share = f"{self.from_cache} of {self.outputs} outputs from the cache"
        if self.mode is CacheMode.REFRESH:
            return f"{share}; {flag} called the providers and refreshed the cache with their answers"
        if self.mode is CacheMode.OFF:
            return f"{share}; the cache is off for this run"
        if self.from_cache:
            return f"{share}; {flag} calls the providers"
        return share

    def to_json(self) -> dict[str, Any]:
        """The report's ``results.evalh.cache``."""
        return {
            "outputs": self.outputs,
            "fromCache": self.from_cache,
            "mode": self.mode.value if self.mode is not None else None,
            "summary": self.sentence(),
        }

    @classmethod
    def from_json(cls, data: Any) -> CacheShare | None:
        """A report's ``results.evalh.cache`` (None when it has none, or not in this shape)."""
        if not isinstance(data, Mapping):
            return None
        outputs, from_cache = data.get("outputs"), data.get("fromCache")
        if type(outputs) is not int or type(from_cache) is not int or not 0 <= from_cache <= outputs:
            return None
        modes = {mode.value: mode for mode in CacheMode}
        mode = data.get("mode")
        return cls(outputs, from_cache, modes.get(mode) if isinstance(mode, str) else None)
