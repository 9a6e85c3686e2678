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
from json import encoder as json_encoder
from typing import Any

from evalh.model import Status
from evalh.reports.codec_read import row_description, row_line, row_prompt, row_provider, row_status, row_vars

__all__ = ["cell_key", "describe_test", "row_key", "stored_status"]


def _label(value: Any, first: str, then: str) -> Any:
    """``value``'s ``first`` key when set, else its ``then`` key when set (a mapping), else ``value``."""
    if type(value) is dict or isinstance(value, Mapping):  # a row's own dict: no ABC check
        return value.get(first) or value.get(then) or None
    return value


def row_key(row: Mapping[str, Any]) -> str:
    """The row's identity (description, vars, prompt, provider, repeat) as a sha256 hex digest of
    canonical JSON, stable across runs; the run store keeps it in its ``test_key`` column."""
    identity = _identity(row)
    identity["repeat"] = row_line(row)[1]
    return _digest(identity)


def cell_key(row: Mapping[str, Any]) -> str:
    """The identity of the row's test x prompt x provider cell, without its repeat: the rows of one
    test's repeats share it, so two runs' tests are compared over all their repeats."""
    return _digest(_identity(row))


def _identity(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "description": row_description(row),
        "vars": row_vars(row) or {},
        "prompt": _label(row_prompt(row), "label", "raw"),
        "provider": _label(row_provider(row), "label", "id"),
    }


# json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str): the digests of stored runs are
# of this exact text, so it stays json's (not the reports' orjson form). Its C encoder is made once, not
# per row as JSONEncoder.encode makes it, and without the check for cycles (a dict of ids per row): an
# identity never has one, and one would end in RecursionError, encoded again with the check, which
# names it as json.dumps does.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
_C_ENCODER: Any = getattr(json_encoder, "c_make_encoder", None)  # private: typeshed omits it
_ENCODE: Any = (
    _C_ENCODER(None, str, json_encoder.encode_basestring, None, ": ", ", ", True, False, True)
    if _C_ENCODER is not None
    else None
)


def _canonical(identity: Mapping[str, Any]) -> str:
    if _ENCODE is not None:
        try:
            return "".join(_ENCODE(identity, 0))
        except RecursionError:
            pass
    return _CANONICAL.encode(identity)


def _digest(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(identity).encode("utf-8", "surrogatepass")).hexdigest()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def describe_test(row: Mapping[str, Any]) -> str:
    """A short human name for the row's test: its description, else its vars as ``k=v`` pairs."""
    description = row_description(row)
    if description:
        return str(description)
    variables = row_vars(row)
    if isinstance(variables, Mapping) and variables:
        return ", ".join(f"{k}={_text(v)}" for k, v in variables.items())
    return f"test {row_line(row)[0] + 1}"


_WORDS = {status: status.value.lower() for status in Status}


def stored_status(row: Mapping[str, Any]) -> str:
    """The row's status as the run store keeps it: ``pass``, ``fail`` or ``error`` (the codec decides)."""
    return _WORDS[row_status(row)]
