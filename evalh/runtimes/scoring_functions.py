"""promptfoo's ``assertScoringFunction``: user code that decides a test's verdict from its assertions.

``file://score.py[:fn]`` runs in a Python worker, ``file://score.js[:fn]`` in the embedded JavaScript
engine (CommonJS, or what :func:`file_source` loads); without ``:fn`` the function is ``func`` (Python)
or the module's export (JavaScript), as promptfoo's ``loadFunction`` picks it. It is called with
``(namedScores, context)`` and returns a GradingResult, ``{pass, score, reason}``; a call that raises,
times out or returns anything else raises :class:`ScoringFailed`. What the result does to the row:
``runner/scoring_function.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES, JsFileProblem, file_source, split_js_target
from evalh.runtimes.transforms import is_python_file, python_file_target, value_kind

# The runtimes are imported by the first call of a scoring function: a config without one never loads them.

__all__ = ["DEFAULT_FUNCTION", "ScoringFailed", "call_scoring_function", "scoring_function_problem"]

DEFAULT_FUNCTION = "func"  # promptfoo's loadFunction default for a Python file


class ScoringFailed(Exception):
    """The scoring function gave no verdict; the message says why."""


def scoring_function_problem(value: Any, config_dir: Path | None) -> str | None:
    """What is wrong with an ``assertScoringFunction`` as written (validate), or None. Runs none of it."""
    if not isinstance(value, str) or not value.startswith("file://"):
        return "assertScoringFunction is a file://score.py[:fn] or file://score.js[:fn] path"
    if is_python_file(value):
        target = python_file_target(value, config_dir, DEFAULT_FUNCTION)
        return None if Path(target.path).is_file() else f"scoring function file {target.shown} was not found"
    shown, _ = split_js_target(value)
    if not shown.endswith(JS_FILE_SUFFIXES):
        kinds = ", ".join(JS_FILE_SUFFIXES)
        return f"scoring function file {shown} must be Python (.py) or JavaScript ({kinds})"
    try:
        file_source(value, config_dir)
    except JsFileProblem as error:
        return str(error)
    return None


async def call_scoring_function(
    value: str,
    named_scores: Mapping[str, float],
    context: Mapping[str, Any],
    *,
    config_dir: Path | None,
    timeout_s: float,
) -> Mapping[str, Any]:
    """The GradingResult the function returns for ``(named_scores, context)``; raises ScoringFailed."""
    args = (dict(named_scores), dict(context))
    from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript
    from evalh.runtimes.python import WorkerLost

    try:
        if is_python_file(value):
            result = await _python(value, args, config_dir, timeout_s)
        else:
            outcome = await call_javascript(file_source(value, config_dir), args, timeout_s=timeout_s)
            if isinstance(outcome, JsThrown):
                raise ScoringFailed(outcome.message)
            result = outcome.value
    except (TimedOut, JsFailed, JsFileProblem, WorkerLost) as error:
        raise ScoringFailed(str(error) or type(error).__name__) from None
    if not _is_grading_result(result):
        raise ScoringFailed(
            f"assertion scoring function must return a GradingResult ({{pass, score, reason}}), "
            f"got {value_kind(result)}"
        )
    return dict(result)


async def _python(value: str, args: tuple[Any, ...], config_dir: Path | None, timeout_s: float) -> Any:
    from evalh.runtimes.python import LoadProblem, Raised, call_python

    outcome = await call_python(
        python_file_target(value, config_dir, DEFAULT_FUNCTION), args, timeout_s=timeout_s
    )
    if isinstance(outcome, LoadProblem):
        raise ScoringFailed(outcome.text)
    if isinstance(outcome, Raised):
        raise ScoringFailed(outcome.describe())
    return outcome.value


def _is_grading_result(result: Any) -> bool:
    """promptfoo's ``isGradingResult``: pass a boolean, score a number, reason a string; namedScores,
    when given, an object of numbers."""
    if not isinstance(result, Mapping):
        return False
    score = result.get("score")
    named = result.get("namedScores")
    return (
        isinstance(result.get("pass"), bool)
        and isinstance(score, int | float)
        and not isinstance(score, bool)
        and isinstance(result.get("reason"), str)
        and (named is None or isinstance(named, Mapping))
    )
