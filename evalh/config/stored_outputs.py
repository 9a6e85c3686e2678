"""``options.storeOutputAs`` at load time: which var names later tests receive from earlier outputs,
and which of a test's vars must wait for them.

promptfoo stores each output of a test with ``storeOutputAs: NAME`` as the var NAME of every test run
after it (runner/sequence.py does that during the run). A var written as a template of such a name
(``'Why do you like {{ favoriteFruit }}?'``) cannot be rendered at load, where evalh renders the other
vars: it is kept as written and rendered when its test runs, with the stored output inserted as data
(never rendered itself). Which names are stored is a run-matrix rule the runner shares:
evalh/model/matrix.py (:func:`~evalh.model.stored_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.errors import TemplateError
from evalh.templating import has_template, referenced_names

__all__ = ["late_var_names"]

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
