"""promptfoo's var scripts: a var written ``file://x.py`` or ``file://x.js`` is run for its value each
time a row's prompt is rendered (``renderPrompt`` in promptfoo's ``src/evaluatorHelpers.ts``).

Python: ``get_var(var_name, prompt, other_vars)`` (or the function named by ``:fn``) in the worker
pool; JavaScript: the module's function (``module.exports``, else its ``default``, or ``:fn``) in the
embedded engine, called with ``(varName, prompt, vars, provider)`` where ``provider`` is ``{id,
label}``. ``prompt`` is the prompt as written (promptfoo passes the template, not the rendered text);
``vars`` are the row's vars, those run before this one holding their values already. The script
returns ``{output: ...}`` or ``{error: ...}``: a Python output must be a string and is trimmed, a
JavaScript one is taken as is. An error, a missing output, a raise or a timeout fails the row (an
ERROR row, as in promptfoo). The output is data: put in the var, never rendered as a template.

Deadlines: the run's ``timeoutMs`` per call, else 30 s for Python and 10 s for JavaScript (those of
the ``python`` and ``javascript`` assertions).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S, PYTHON_ASSERTION_TIMEOUT_S
from evalh.common.limits import MAX_REPLY_ENV, max_reply_bytes, reply_size
from evalh.model import plain_vars, script_var_names
from evalh.runtimes.javascript_source import JsFileProblem, file_source
from evalh.runtimes.transforms import is_python_file, python_file_target

# The runtimes are imported by the first var script run: vars without one never load them.

__all__ = ["VAR_SCRIPT_FUNCTION", "VarScriptFailed", "run_var_scripts"]

VAR_SCRIPT_FUNCTION = "get_var"  # promptfoo's name for a Python var script's function


class VarScriptFailed(Exception):
    """A var script gave no value; the message names the var and the script and says why."""


async def run_var_scripts(
    variables: Mapping[str, Any],
    written: str | Sequence[Mapping[str, Any]],
    provider: Mapping[str, Any],
    *,
    config_dir: Path | None,
    timeout_s: float | None,
) -> dict[str, Any]:
    """``variables`` with each var script replaced by the value it returns, run in the order written.
    ``written`` is the prompt as written (chat messages as their JSON text, as promptfoo holds them).
    Raises VarScriptFailed at the first script that fails."""
    prompt = written if isinstance(written, str) else json.dumps(list(written), ensure_ascii=False)
    values = plain_vars(variables)
    for name in script_var_names(variables):
        from evalh.runtimes.javascript import JsFailed, TimedOut
        from evalh.runtimes.python import WorkerLost

        ref = values[name]
        try:
            values[name] = _within_cap(
                await _value(ref, name, prompt, values, provider, config_dir, timeout_s)
            )
        except (TimedOut, JsFailed, JsFileProblem, WorkerLost) as error:
            raise VarScriptFailed(f"var {name}: {ref} failed: {error or type(error).__name__}") from None
        except VarScriptFailed as error:
            raise VarScriptFailed(f"var {name}: {ref} {error}") from None
    return values


async def _value(
    ref: str,
    name: str,
    prompt: str,
    values: dict[str, Any],
    provider: Mapping[str, Any],
    config_dir: Path | None,
    timeout_s: float | None,
) -> Any:
    from evalh.runtimes.javascript import JsThrown, call_javascript
    from evalh.runtimes.python import LoadProblem, Raised, call_python

    if is_python_file(ref):
        target = python_file_target(ref, config_dir, VAR_SCRIPT_FUNCTION)
        args = (name, prompt, dict(values))
        outcome = await call_python(target, args, timeout_s=timeout_s or PYTHON_ASSERTION_TIMEOUT_S)
        if isinstance(outcome, LoadProblem):
            raise VarScriptFailed(f"cannot be loaded: {outcome.text}")
        if isinstance(outcome, Raised):
            raise VarScriptFailed(f"raised {outcome.describe()}")
        output = _output(outcome.value)
        if not isinstance(output, str):
            raise VarScriptFailed(f"returned an output that is {type(output).__name__}, not a string")
        return output.strip()
    source = file_source(ref, config_dir)
    js_args = (name, prompt, dict(values), dict(provider))
    js = await call_javascript(source, js_args, timeout_s=timeout_s or JAVASCRIPT_TIMEOUT_S)
    if isinstance(js, JsThrown):
        raise VarScriptFailed(f"threw {js.message}")
    return _output(js.value)


def _within_cap(value: Any) -> Any:
    """``value`` if it is no larger than one provider reply may be: a var goes into every prompt and
    report of its row (a 300 MB value made a 600 MB report)."""
    limit = max_reply_bytes()
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit // 4 and len(text.encode("utf-8", "replace")) > limit:
        raise VarScriptFailed(
            f"returned more than {reply_size(limit)}, the cap on one reply: write a shorter value, or raise "
            f"the cap with the environment variable {MAX_REPLY_ENV} (in MiB)"
        )
    return value


def _output(result: Any) -> Any:
    """The ``output`` of a script's ``{output}`` / ``{error}`` result (promptfoo's checks, in order)."""
    if isinstance(result, Mapping) and result.get("error"):
        raise VarScriptFailed(f"returned the error: {result['error']}")
    output = result.get("output") if isinstance(result, Mapping) else None
    if not output:  # promptfoo refuses a falsy output too ("", 0, null)
        raise VarScriptFailed("returned no output (a var script returns {output: value} or {error: message})")
    return output
