"""A result row's identity (:func:`row_key`): what makes "the same row" in two runs, for ``evalh diff``.

The identity of a promptfoo ``EvaluateResult`` row is its description, its vars, its prompt's label
and its provider's label (the id when it has none), and its repeat index. Neither the row's position
nor its id enters it, so it holds across runs and between a stored run and a JSON report file; editing
a test's vars, a prompt's text (the label of an unlabelled prompt) or a provider's label makes it
another row. A test's identity, without prompt, provider or repeat, is another notion:
:func:`evalh.runner.filters.test_identity`, which matches a config's tests to a report's rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["describe_test", "row_key", "row_status"]


def _label(value: Any, *keys: str) -> Any:
    if isinstance(value, Mapping):
        for key in keys:
            if value.get(key):
                return value[key]
        return None
    return value


def _description(row: Mapping[str, Any]) -> Any:
    test_case = row.get("testCase")
    nested = test_case.get("description") if isinstance(test_case, Mapping) else None
    return row.get("description") or nested or None


def row_key(row: Mapping[str, Any]) -> str:
    """The row's identity (description, vars, prompt, provider, repeat) as a sha256 hex digest of
    canonical JSON, stable across runs; the run store keeps it in its ``test_key`` column."""
    identity = {
        "description": _description(row),
        "vars": row.get("vars") or {},
        "prompt": _label(row.get("prompt"), "label", "raw"),
        "provider": _label(row.get("provider"), "label", "id"),
        "repeat": row.get("repeatIdx") or 0,
    }
    canonical = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def describe_test(row: Mapping[str, Any]) -> str:
    """A short human name for the row's test: its description, else its vars as ``k=v`` pairs."""
    description = _description(row)
    if description:
        return str(description)
    variables = row.get("vars")
    if isinstance(variables, Mapping) and variables:
        return ", ".join(f"{k}={_text(v)}" for k, v in variables.items())
    return f"test {int(row.get('testIdx') or 0) + 1}"


def row_status(row: Mapping[str, Any]) -> str:
    """``pass``, ``fail`` or ``error`` (promptfoo's ``success`` and ``failureReason`` 2)."""
    if row.get("success"):
        return "pass"
    return "error" if row.get("failureReason") == 2 else "fail"
