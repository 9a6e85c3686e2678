"""Vars whose value is a script run for it when the row renders (promptfoo's ``get_var`` files).

promptfoo runs a var written ``file://x.py`` / ``file://x.js`` each time a row's prompt is rendered
(``renderPrompt`` in ``src/evaluatorHelpers.ts``) and puts what it returns in the var. The loader
(config/var_files.py) marks such a value :class:`VarScript`; the runner (runner/execute.py, through
runtimes/var_scripts.py) runs it per row. Only a value the loader marked runs: a ``--var`` value or a
file's text that happens to read ``file://x.py`` stays text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["VarScript", "plain_vars", "script_var_names"]


class VarScript(str):
    """A var's ``file://`` script reference, as written (so reports and plans show it as text)."""

    __slots__ = ()


def script_var_names(variables: Mapping[str, Any]) -> tuple[str, ...]:
    """The vars to run for their value, in the order written (promptfoo runs them in that order)."""
    return tuple(name for name, value in variables.items() if isinstance(value, VarScript))


def plain_vars(variables: Mapping[str, Any]) -> dict[str, Any]:
    """``variables`` with the markers as plain text, as user code is handed them."""
    return {name: str(value) if isinstance(value, VarScript) else value for name, value in variables.items()}
