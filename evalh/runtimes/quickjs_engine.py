"""The embedded QuickJS engine (the ``quickjs-ng`` package: 2.5 MB, ES2023, no Node), imported on first
use, and the memory cap every context gets. Shared by user code (runtimes/javascript.py) and the
TypeScript compiler (runtimes/typescript.py)."""

from __future__ import annotations

from typing import Any

from evalh.errors import EvalhError

__all__ = ["MEMORY_LIMIT_BYTES", "engine"]

MEMORY_LIMIT_BYTES = 256 << 20
_FIX = "pip install quickjs-ng (a dependency of evalh; reinstall evalh to restore it)"


def engine() -> Any:
    """The quickjs module, or a fix-it error when it is missing."""
    try:
        import quickjs  # type: ignore[import-untyped]  # lazy: only configs with JavaScript pay for it
    except ImportError:
        raise EvalhError("the JavaScript engine is not installed", hint=_FIX) from None
    return quickjs
