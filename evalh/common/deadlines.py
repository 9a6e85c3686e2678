"""How long evalh waits for anything it does not control: the one home of every default deadline.

Every wait on something outside evalh is bounded, so a hanging server, script or pattern costs one row,
never the run:

* ``python`` assertion: 30 s per call; the assertion's ``config.timeout`` (seconds) or
  ``config.timeoutMs``, else ``evaluateOptions.timeoutMs``.
* ``javascript`` assertions and JavaScript transforms: 10 s per call; the assertion's ``config.timeout``
  / ``config.timeoutMs``, else ``evaluateOptions.timeoutMs``.
* ``python:`` and ``exec:`` providers: 300 s per call; the provider's ``config.timeout`` /
  ``config.timeoutMs``, else ``evaluateOptions.timeoutMs``.
* test generators (``tests: file://gen.py``): 120 s for a Python one, 10 s for a JavaScript one.
* var scripts (``vars: {x: file://load.py}``): 30 s per row for Python, 10 s for JavaScript; else
  ``evaluateOptions.timeoutMs``.
* ``exec:`` prompts: 60 s per row (promptfoo's default); the prompt's ``config.timeout`` /
  ``config.timeoutMs``, else ``evaluateOptions.timeoutMs``.
* ``regex`` (and other patterns run on outputs): 1 s per output; the assertion's ``config.timeout`` /
  ``config.timeoutMs``.
* HTTP providers: 60 s per attempt (``timeout`` / ``timeoutMs``) and 120 s for the whole call with its
  retries (``totalTimeout`` / ``totalTimeoutMs``; never less than one attempt's timeout).

A leaf module (imports nothing of evalh but the error tree), so every layer reads the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalh.errors import ConfigError

__all__ = [
    "EXEC_PROMPT_TIMEOUT_S",
    "HTTP_ATTEMPT_TIMEOUT_S",
    "HTTP_TOTAL_TIMEOUT_S",
    "JAVASCRIPT_TIMEOUT_S",
    "PROMPT_FUNCTION_TIMEOUT_S",
    "PROVIDER_SCRIPT_TIMEOUT_S",
    "PYTHON_ASSERTION_TIMEOUT_S",
    "REGEX_TIMEOUT_S",
    "TEST_GENERATOR_TIMEOUT_S",
    "call_timeout_s",
    "configured_timeout_s",
    "timeout_problem",
]

PYTHON_ASSERTION_TIMEOUT_S = 30.0
# JavaScript is in-process and a stopped call keeps its thread busy until the engine's CPU limit: short.
JAVASCRIPT_TIMEOUT_S = 10.0
PROVIDER_SCRIPT_TIMEOUT_S = 300.0
# a prompt function builds text from vars; one that takes longer is stuck (also bounded by timeoutMs)
PROMPT_FUNCTION_TIMEOUT_S = JAVASCRIPT_TIMEOUT_S
# a Python test generator may read a dataset while the config loads; once per run, so generous
TEST_GENERATOR_TIMEOUT_S = 120.0
EXEC_PROMPT_TIMEOUT_S = 60.0  # promptfoo's own default for a program that prints the prompt
REGEX_TIMEOUT_S = 1.0
HTTP_ATTEMPT_TIMEOUT_S = 60.0
HTTP_TOTAL_TIMEOUT_S = 120.0


def _seconds(config: Mapping[str, Any], seconds_key: str, ms_key: str) -> float | tuple[str, str] | None:
    """The configured seconds, None when neither key is set, or (key, problem text)."""
    for key, scale in ((seconds_key, 1.0), (ms_key, 1000.0)):
        value = config.get(key)
        if value is None:
            continue
        number = _number(value)
        if number is None or number <= 0:
            return key, f"config.{key} must be a positive number (got {value!r})"
        return number / scale
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def timeout_problem(
    config: Mapping[str, Any], seconds_key: str = "timeout", ms_key: str = "timeoutMs"
) -> str | None:
    """What is wrong with the configured timeout, for config validation; None if it is fine or unset."""
    found = _seconds(config, seconds_key, ms_key)
    return found[1] if isinstance(found, tuple) else None


def configured_timeout_s(
    config: Mapping[str, Any],
    default: float,
    *,
    seconds_key: str = "timeout",
    ms_key: str = "timeoutMs",
    where: str | None = None,
) -> float:
    """``config[seconds_key]`` (seconds), else ``config[ms_key]`` (milliseconds), else ``default``.

    A value that is not a positive number is a ConfigError at ``<where>.config.<key>``."""
    if not config:  # most configs are empty: each regex assertion of a run asks
        return default
    found = _seconds(config, seconds_key, ms_key)
    if isinstance(found, tuple):
        key, problem = found
        raise ConfigError(problem, where=f"{where}.config.{key}" if where else None)
    return default if found is None else found


def call_timeout_s(
    config: Mapping[str, Any], run_timeout_s: float | None, default: float, *, where: str | None = None
) -> float:
    """A call's timeout (a provider's, a ``python`` assertion's): its ``config.timeout`` / ``timeoutMs``,
    else the run's (``evaluateOptions.timeoutMs``), else ``default``."""
    return configured_timeout_s(config, run_timeout_s or default, where=where)
