"""promptfoo's ``nunjucksFilters: {name: file://filter.js}``: template filters written by the config's
author, run where user code runs (the JavaScript engine, or a Python worker), never in evalh's process.

A render is synchronous and filters are called from inside it, so each call is one round trip through
the async runtime on a helper thread of its own event loop, with the JavaScript deadline: JavaScript
(``module.exports``, or ``:fn``), or a Python function (``file://filters.py[:fn]``, by default the one
named like the filter). They work wherever a template renders: while the config loads, and inside the
run (a rubric prompt, an HTTP body), where the run's event loop waits for the render. Python filters
therefore run in workers apart from the run's pool (``call_python(..., apart=True)``): a filter queued
behind the run's own calls, which that waiting loop drives, would wait for ever.

A filter that throws or times out fails the render it is in, which names the template's place.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S
from evalh.runtimes.javascript_source import JsFileProblem, file_source
from evalh.runtimes.prompt_functions import script_problem
from evalh.runtimes.transforms import is_python_file, python_file_target, run_blocking

# The runtimes are imported by the first filter called: a config without nunjucksFilters never loads them.

__all__ = ["UserFilterFailed", "filter_problem", "user_filters"]


class UserFilterFailed(ValueError):
    """A user filter that threw, timed out or cannot run here (a ValueError: the render reports it)."""


def filter_problem(name: str, ref: Any, config_dir: Path | None) -> str | None:
    """What is wrong with one ``nunjucksFilters`` entry as written (validate), or None. Runs no code."""
    if not name.isidentifier():
        return f"filter name {name!r} must be a name a template can write (letters, digits, _)"
    if not isinstance(ref, str) or not ref.startswith("file://"):
        return f"filter {name!r} must be a filter.js[:fn] or filters.py[:fn] path"
    return script_problem(ref, config_dir, name)


def user_filters(refs: Mapping[str, str], config_dir: Path | None) -> dict[str, Callable[..., Any]]:
    """The template filters ``refs`` (name -> ``file://`` reference) define, ready to register."""
    return {name: _filter(name, ref, config_dir) for name, ref in refs.items()}


def _filter(name: str, ref: str, config_dir: Path | None) -> Callable[..., Any]:
    def call(value: Any, *args: Any) -> Any:
        if is_python_file(ref):
            return _sync(name, lambda: _python(ref, name, config_dir, (value, *args)))
        return _sync(name, lambda: _javascript(ref, config_dir, (value, *args)))

    call.__name__ = name
    return call


def _sync(name: str, start: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    from evalh.runtimes.javascript import JsFailed, TimedOut
    from evalh.runtimes.python import WorkerLost

    try:
        return run_blocking(start)
    except (TimedOut, JsFailed, JsFileProblem, WorkerLost) as error:
        raise UserFilterFailed(f"filter {name!r} failed: {error or type(error).__name__}") from None


async def _python(ref: str, name: str, config_dir: Path | None, args: tuple[Any, ...]) -> Any:
    target = python_file_target(ref, config_dir, name)
    from evalh.runtimes.python import LoadProblem, Raised, call_python

    outcome = await call_python(target, args, timeout_s=JAVASCRIPT_TIMEOUT_S, apart=True)
    if isinstance(outcome, LoadProblem):
        raise UserFilterFailed(f"filter {name!r}: {outcome.text}")
    if isinstance(outcome, Raised):
        raise UserFilterFailed(f"filter {name!r} raised {outcome.describe()}")
    return outcome.value


async def _javascript(ref: str, config_dir: Path | None, args: tuple[Any, ...]) -> Any:
    from evalh.runtimes.javascript import JsThrown, call_javascript

    outcome = await call_javascript(file_source(ref, config_dir), args, timeout_s=JAVASCRIPT_TIMEOUT_S)
    if isinstance(outcome, JsThrown):
        raise UserFilterFailed(f"filter {ref} threw {outcome.message}")
    return None if outcome.type_name == "undefined" else outcome.value
