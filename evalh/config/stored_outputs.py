"""``options.storeOutputAs`` at load time: which var names later tests receive from earlier outputs,
and which of a test's vars must wait for them.

promptfoo stores each output of a test with ``storeOutputAs: NAME`` as the var NAME of every test run
after it (runner/sequence.py does that during the run). A var written as a template of such a name
(``'Why do you like {{ favoriteFruit }}?'``) cannot be rendered at load, where evalh renders the other
vars: it is kept as written and rendered when its test runs, with the stored output inserted as data
(never rendered itself).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalh.errors import TemplateError
from evalh.model import Prompt, TestCase
from evalh.templating import has_template, referenced_names

__all__ = [
    "CONVERSATION_VAR",
    "STORE_KEY",
    "late_var_names",
    "run_placeholders",
    "stored_names",
    "uses_conversation",
]

STORE_KEY = "storeOutputAs"
CONVERSATION_VAR = "_conversation"  # promptfoo's var of a prompt's earlier turns (runner/sequence.py)


def stored_names(options: Iterable[Any]) -> frozenset[str]:
    """The names some test's (or defaultTest's) ``options.storeOutputAs`` stores outputs under."""
    return frozenset(
        str(option[STORE_KEY])
        for option in options
        if isinstance(option, Mapping) and isinstance(option.get(STORE_KEY), str)
    )


_NONE: frozenset[str] = frozenset()  # one empty set for every test (each new one took 216 bytes)


def late_var_names(
    variables: Mapping[str, Any], stored: frozenset[str], literal: frozenset[str]
) -> frozenset[str]:
    """The vars whose templates read a stored name, directly or through another such var."""
    if not stored:
        return _NONE
    reads: dict[str, frozenset[str]] = {}
    for name, value in variables.items():
        if name in literal or not isinstance(value, str) or not has_template(value):
            continue
        try:
            reads[name] = referenced_names(value, where=name)
        except TemplateError:
            continue  # reported when the var is rendered
    late: set[str] = set()
    grown = True
    while grown:
        grown = False
        for name, names in reads.items():
            if name not in late and names & (stored | late):
                late.add(name)
                grown = True
    return frozenset(late) if late else _NONE


def uses_conversation(prompt: Prompt) -> bool:
    """promptfoo's test: the raw prompt mentions ``_conversation``."""
    text = prompt.raw if isinstance(prompt.raw, str) else json.dumps(prompt.raw)
    return CONVERSATION_VAR in text


def run_placeholders(tests: Sequence[TestCase], prompts: Sequence[Prompt]) -> dict[str, Any]:
    """Stand-ins for the vars only a run sets (stored outputs, ``_conversation``), so that rendering
    prompts while planning does not call them undefined."""
    values: dict[str, Any] = dict.fromkeys(stored_names(test.options for test in tests), "")
    if any(uses_conversation(prompt) for prompt in prompts):
        values[CONVERSATION_VAR] = []
    return values
