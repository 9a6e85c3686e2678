"""A provider's transport settings, read once from its ``config`` (camelCase keys, as in promptfoo)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalh.common.deadlines import HTTP_ATTEMPT_TIMEOUT_S, configured_timeout_s
from evalh.errors import ConfigError

__all__ = ["HttpSettings"]


@dataclass(frozen=True)
class HttpSettings:
    """Transport settings read from a provider's ``config`` (camelCase keys, as in promptfoo).

    ``timeout`` (seconds) or ``timeoutMs`` per attempt; ``totalTimeout`` (seconds) or ``totalTimeoutMs``
    for the whole call with its retries; ``maxRetries``; ``maxTotalWaitS``; ``retryBaseDelayS``;
    ``retryMaxDelayS``. (``maxConcurrency`` is the runner's: one gate per provider, see runner/services.py.)
    """

    timeout_s: float = HTTP_ATTEMPT_TIMEOUT_S
    total_timeout_s: float | None = None  # None: HTTP_TOTAL_TIMEOUT_S, or one attempt's timeout if longer
    max_retries: int = 4
    max_total_wait_s: float = 120.0
    retry_base_delay_s: float = 1.0
    retry_max_delay_s: float = 30.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any], where: str | None = None) -> HttpSettings:
        """Read the settings; a ConfigError naming the key when one is not a number."""
        timeout = configured_timeout_s(config, cls.timeout_s, where=where)
        total: float | None = configured_timeout_s(
            config, 0.0, seconds_key="totalTimeout", ms_key="totalTimeoutMs", where=where
        )
        return cls(
            timeout_s=timeout,
            total_timeout_s=total or None,
            max_retries=int(_number(config, "maxRetries", where, cls.max_retries)),
            max_total_wait_s=_number(config, "maxTotalWaitS", where, cls.max_total_wait_s),
            retry_base_delay_s=_number(config, "retryBaseDelayS", where, cls.retry_base_delay_s),
            retry_max_delay_s=_number(config, "retryMaxDelayS", where, cls.retry_max_delay_s),
        )


def _number(config: Mapping[str, Any], key: str, where: str | None, default: float = 0.0) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        value = "not a number"
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number < 0 or number != number:
        raise ConfigError(
            f"config.{key} must be a non-negative number (got {config.get(key)!r})",
            where=f"{where}.config.{key}" if where else None,
        )
    return number
