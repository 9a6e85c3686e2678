"""The config's ``tracing:`` block (promptfoo's keys, checked by the schema) -> :class:`TracingSettings`.

``PROMPTFOO_TRACING_ENABLED=true`` (the run's environment or the config's ``env:``) turns tracing on as
``tracing.enabled: true`` does, as in promptfoo. ``forwarding`` is accepted and not followed: evalh makes
no network call to another collector, and says so once. ``otlp.http.redactAttributes`` and
``commandToolNames`` are read as promptfoo reads them (trimmed, lowercased, each once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.common.environment import getenv
from evalh.common.notices import warn
from evalh.errors import ConfigError
from evalh.model import DEFAULT_OTLP_PORT, TracingSettings

__all__ = ["ENABLE_ENV", "load_tracing"]

ENABLE_ENV = "PROMPTFOO_TRACING_ENABLED"
_TRUE = ("1", "true", "yes", "on")


def load_tracing(
    value: Mapping[str, Any] | None, env: Mapping[str, str], forwarding_where: str
) -> TracingSettings:
    """The settings of a ``tracing:`` block the schema accepted (None: absent); ``forwarding_where``
    locates its ``forwarding`` key for the warning."""
    block = value or {}
    flag = env.get(ENABLE_ENV) or getenv(ENABLE_ENV) or ""
    http = (block.get("otlp") or {}).get("http") or {}
    forwarding = block.get("forwarding") or {}
    settings = TracingSettings(
        enabled=bool(block.get("enabled", False)) or str(flag).strip().lower() in _TRUE,
        port=int(http.get("port", DEFAULT_OTLP_PORT)),
        receive=bool(http.get("enabled", True)),
        wait_ms=int(block.get("waitMs", TracingSettings.wait_ms)),
        forward_to=str(forwarding["endpoint"]) if forwarding.get("endpoint") else None,
        redact_attributes=_lowered(http.get("redactAttributes")),
        command_tool_names=_lowered(block.get("commandToolNames")),
    )
    if settings.enabled and forwarding and forwarding.get("enabled", True):
        warn(
            ConfigError(
                "not followed: evalh keeps a run's spans with its rows and sends them nowhere else",
                where=forwarding_where,
                hint="Export to your collector from the provider as well, or remove tracing.forwarding",
            ),
            where=forwarding_where,
            subject="forwarding",
        )
    return settings


def _lowered(names: Any) -> tuple[str, ...]:
    """A list of names as promptfoo reads it: trimmed, lowercased, blanks dropped, each once."""
    cleaned = (name.strip().lower() for name in names or () if isinstance(name, str))
    return tuple(dict.fromkeys(name for name in cleaned if name))
