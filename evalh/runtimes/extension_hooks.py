"""promptfoo's extension hooks (``extensions: [file://hooks.py:fn]``, ``src/evaluatorHelpers.ts``
``runExtensionHook``): user functions called at four points of a run.

An extension is ``file://hooks.py:fn`` (Python, in the worker pool) or ``file://hooks.js[:fn]``
(JavaScript, in the embedded engine). promptfoo's two calling conventions:
- the function is named after a hook (``:beforeAll``, ``:beforeEach``, ``:afterEach``, ``:afterAll``):
  it is called for that hook only, as ``fn(context, {hookName})``;
- any other name: it is called for every hook, as ``fn(hookName, context)``.
Several extensions run in the order written, each seeing the context the one before returned.
Each call has a deadline: the run's ``timeoutMs``, else 30 s for Python and 10 s for JavaScript. The
context is plain data (JSON), and what a hook returns is data too.

beforeEach (:func:`before_each`) is called with ``{test}`` before each row, the test merged with
defaultTest as the row runs it; of the test it returns, changed ``vars``, ``description`` and
``metadata`` are taken (the vars are data, never rendered), and any other change fails the row with
a message saying so, since evalh checked and built the test's assertions when the config loaded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S, PYTHON_ASSERTION_TIMEOUT_S
from evalh.common.limits import MAX_REPLY_ENV, max_reply_bytes, reply_size
from evalh.model import TestCase, VarScript, plain_vars
from evalh.runtimes.javascript_source import JsFileProblem, file_source, split_js_target
from evalh.runtimes.transforms import is_python_file, python_file_target

# The runtimes are imported by the first hook called: a config without extensions never loads them.

__all__ = ["HOOK_NAMES", "HookFailed", "before_each", "call_hook", "hook_function", "hooks_for"]

HOOK_NAMES = ("beforeAll", "beforeEach", "afterEach", "afterAll")


class HookFailed(Exception):
    """A hook raised, timed out or could not be loaded; the message names the hook and the extension."""


def hook_function(ref: str) -> str | None:
    """The function an extension names (``file://hooks.py:fn`` -> ``fn``), or None."""
    if is_python_file(ref):
        function = python_file_target(ref, None, "").function
        return function or None
    return split_js_target(ref)[1]


def hooks_for(extensions: tuple[str, ...], hook: str) -> tuple[str, ...]:
    """The extensions called for ``hook``: those named after it, and those named after no hook."""
    return tuple(
        ref for ref in extensions if hook_function(ref) == hook or hook_function(ref) not in HOOK_NAMES
    )


async def call_hook(
    ref: str, hook: str, context: Mapping[str, Any], *, config_dir: Path | None, timeout_s: float | None
) -> Any:
    """What the extension ``ref`` returns for ``hook`` called with ``context`` (promptfoo's convention
    by its function's name). Raises HookFailed."""
    own = hook_function(ref) == hook
    args: tuple[Any, ...] = (dict(context), {"hookName": hook}) if own else (hook, dict(context))
    from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript
    from evalh.runtimes.python import LoadProblem, Raised, WorkerLost, call_python

    try:
        if is_python_file(ref):
            target = python_file_target(ref, config_dir, "")
            outcome = await call_python(target, args, timeout_s=timeout_s or PYTHON_ASSERTION_TIMEOUT_S)
            if isinstance(outcome, LoadProblem):
                raise HookFailed(f"cannot be loaded: {outcome.text}")
            if isinstance(outcome, Raised):
                raise HookFailed(f"raised {outcome.describe()}")
            return outcome.value
        source = file_source(ref, config_dir)
        js = await call_javascript(source, args, timeout_s=timeout_s or JAVASCRIPT_TIMEOUT_S)
        if isinstance(js, JsThrown):
            raise HookFailed(f"threw {js.message}")
        return js.value
    except (TimedOut, JsFailed, JsFileProblem, WorkerLost) as error:
        raise HookFailed(f"failed: {error or type(error).__name__}") from None


_TAKEN = ("vars", "description", "metadata")  # what evalh takes of the test a beforeEach hook returns


def _test_context(test: TestCase) -> dict[str, Any]:
    """The test as a hook sees it (promptfoo's test object: as written, merged with defaultTest)."""
    data: dict[str, Any] = {"vars": plain_vars(test.vars)}
    if test.description is not None:
        data["description"] = test.description
    data["assert"] = [dict(spec.raw) if spec.raw else {"type": spec.type} for spec in test.asserts]
    data["options"] = dict(test.options)
    data["metadata"] = dict(test.metadata)
    if test.threshold is not None:
        data["threshold"] = test.threshold
    return data


async def before_each(
    extensions: tuple[str, ...], test: TestCase, *, config_dir: Path | None, timeout_s: float | None
) -> TestCase:
    """``test`` after the beforeEach hooks (the same object when none changed it). Raises HookFailed."""
    sent = _test_context(test)
    current: Any = sent
    for ref in hooks_for(extensions, "beforeEach"):
        try:
            returned = await call_hook(
                ref, "beforeEach", {"test": current}, config_dir=config_dir, timeout_s=timeout_s
            )
        except HookFailed as error:
            raise HookFailed(f"extension {ref} (beforeEach) {error}") from None
        if returned:  # promptfoo: the returned context's test replaces the test
            current = returned.get("test") if isinstance(returned, Mapping) else None
            if not isinstance(current, Mapping):
                raise HookFailed(f"extension {ref} (beforeEach) returned no {{test: ...}}")
            _within_cap(current, ref)
    if current == sent:
        return test
    return _changed_test(test, sent, current)


def _within_cap(test: Mapping[str, Any], ref: str) -> None:
    """A returned test goes into every report of its row: one larger than a provider reply may be (a
    200 MB var made an 800 MB report) fails the row instead."""
    limit = max_reply_bytes()
    if len(json.dumps(test, ensure_ascii=False, default=str).encode("utf-8", "replace")) > limit:
        raise HookFailed(
            f"extension {ref} (beforeEach) returned a test larger than {reply_size(limit)}, the cap on one "
            f"reply: keep large data in files the test names, or raise the cap with {MAX_REPLY_ENV} (in MiB)"
        )


def _changed_test(test: TestCase, sent: Mapping[str, Any], returned: Mapping[str, Any]) -> TestCase:
    changed = [key for key in {*sent, *returned} if key not in _TAKEN and sent.get(key) != returned.get(key)]
    if changed:
        raise HookFailed(
            f"a beforeEach hook changed test.{sorted(changed)[0]}; evalh takes a beforeEach hook's changes "
            f"to {', '.join(_TAKEN)} only (the assertions and options were checked when the config loaded)"
        )
    variables = returned.get("vars")
    metadata = returned.get("metadata")
    if not isinstance(variables, Mapping) or not isinstance(metadata, Mapping):
        raise HookFailed("a beforeEach hook returned a test whose vars or metadata is not a mapping")
    kept = {  # a var script left as it was stays one (its reference came back as text)
        name: value
        for name, value in test.vars.items()
        if isinstance(value, VarScript) and variables.get(name) == str(value)
    }
    description = returned.get("description")
    return replace(
        test,
        vars={**variables, **kept},
        metadata=dict(metadata),
        description=description if isinstance(description, str) else None,
    )
