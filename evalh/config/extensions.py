"""``extensions:`` (promptfoo's extension hooks): each entry checked, and the beforeAll hooks run.

The entries are checked without running them (the file, the function; a Python extension names its
function). promptfoo calls beforeAll when the eval starts, with ``{suite}``, and takes the tests and the
defaultTest the hook returns; evalh calls it while the config loads (by ``validate`` too, as for test
generators: the tests it returns are what is checked), before the tests are built, with the suite as
data: ``tests`` (as written, files and generators read), ``defaultTest`` (with an ``assert`` list, as
promptfoo ensures), ``prompts`` (``{raw, label}``) and ``providers`` (``{id, label}``). A returned test
that differs from the one sent is checked like a generated test and located as
``hooks.py:fn(beforeAll).suite.tests[3]``; a changed prompt or provider list is a located config error,
since evalh builds those before the hook runs. A hook returning nothing leaves the suite as it was.
The other hooks run with the rows (runner/execute.py: beforeEach; session/run.py: afterEach, afterAll).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from evalh.config.build import Defaults
from evalh.config.files import LoadContext, Origin
from evalh.config.locate import Document, format_path
from evalh.config.shapes import defs_checker
from evalh.config.tests_files import RawTest, validated_tests
from evalh.config.unknown_keys import drop_unknown_keys
from evalh.errors import ConfigError, SchemaError, Where
from evalh.model import Prompt, ProviderSpec
from evalh.runtimes.extension_hooks import HOOK_NAMES, HookFailed, call_hook, hook_function, hooks_for
from evalh.runtimes.prompt_functions import script_problem
from evalh.runtimes.transforms import is_python_file, run_blocking

__all__ = ["before_all", "load_extensions"]

_HINT = (
    "An extension is file://hooks.py:fn or file://hooks.js[:fn]: a function named after a hook "
    f"({', '.join(HOOK_NAMES)}) is called as fn(context, {{hookName}}); any other as fn(hookName, context)"
)
_BEFORE_ALL = "beforeAll"


def load_extensions(value: Any, document: Document, ctx: LoadContext) -> tuple[str, ...]:
    """The extensions that can run (the schema checked their shape); problems recorded."""
    kept: list[str] = []
    for index, ref in enumerate(value if isinstance(value, list) else []):
        problem = None
        if is_python_file(ref) and hook_function(ref) is None:
            problem = f"{ref} names no function: write file://hooks.py:function_name"
        else:
            problem = script_problem(ref, ctx.base_dir, "")
        if problem is None:
            kept.append(ref)
        else:
            ctx.problems.add(problem, where=document.where(("extensions", index)), hint=_HINT)
    return tuple(kept)


def before_all(
    extensions: tuple[str, ...],
    raw_tests: list[RawTest],
    defaults: Defaults,
    suite: tuple[list[Prompt], list[ProviderSpec]],
    document: Document,
    ctx: LoadContext,
) -> tuple[list[RawTest], Defaults]:
    """The tests and defaultTest after the beforeAll hooks, run in order when the config has no problem
    so far (a hook is shown a suite that loaded). A hook that fails or changes what it may not is a
    problem recorded at the ``extensions`` key, and the suite stays as it was."""
    if not hooks_for(extensions, _BEFORE_ALL) or ctx.problems:
        return raw_tests, defaults
    where = document.where(("extensions",))
    sent = _suite_context(raw_tests, defaults, suite)
    try:
        returned, shown = _run_hooks(extensions, sent, where, ctx)
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return raw_tests, defaults
    tests = _tests_after(returned["tests"], sent["tests"], raw_tests, shown, ctx)
    if returned["defaultTest"] != sent["defaultTest"]:
        defaults = replace(defaults, data=_checked_default(returned["defaultTest"], where, ctx))
    return tests, defaults


def _suite_context(
    raw_tests: list[RawTest], defaults: Defaults, suite: tuple[list[Prompt], list[ProviderSpec]]
) -> dict[str, Any]:
    return {
        "tests": [dict(raw.data) for raw in raw_tests],
        "defaultTest": {**defaults.data, "assert": list(defaults.data.get("assert") or [])},
        "prompts": [{"raw": prompt.raw, "label": prompt.label} for prompt in suite[0]],
        "providers": [{"id": provider.id, "label": provider.label} for provider in suite[1]],
    }


def _run_hooks(
    extensions: tuple[str, ...], sent: dict[str, Any], where: Where, ctx: LoadContext
) -> tuple[dict[str, Any], str]:
    """The suite the last hook returned, and that hook (for the tests' origins)."""
    context: dict[str, Any] = {"suite": sent}
    shown = "beforeAll"
    for ref in hooks_for(extensions, _BEFORE_ALL):
        try:
            call = functools.partial(
                call_hook, ref, _BEFORE_ALL, context, config_dir=ctx.base_dir, timeout_s=None
            )
            returned = run_blocking(call)
        except HookFailed as error:
            raise ConfigError(f"extension {ref} (beforeAll) {error}", where=where, hint=_HINT) from None
        if returned:
            context, shown = _checked_return(returned, context, ref, where), ref.removeprefix("file://")
    return context["suite"], shown


def _checked_return(returned: Any, sent: dict[str, Any], ref: str, where: Where) -> dict[str, Any]:
    """The hook's ``{suite}``, if it changed only what evalh can take; else a ConfigError."""
    suite = returned.get("suite") if isinstance(returned, Mapping) else None
    if not isinstance(suite, Mapping):
        raise ConfigError(f"extension {ref} (beforeAll) returned no {{suite: ...}}", where=where, hint=_HINT)
    for key in ("prompts", "providers"):
        if key in suite and suite[key] != sent["suite"][key]:
            raise ConfigError(
                f"extension {ref} (beforeAll) changed suite.{key}; evalh takes a beforeAll hook's tests "
                "and defaultTest only",
                where=where,
                hint=f"Write the {key} in the config instead",
            )
    tests, default = suite.get("tests", sent["suite"]["tests"]), suite.get("defaultTest") or {}
    if not isinstance(default, Mapping):
        raise ConfigError(
            f"extension {ref} (beforeAll) returned a defaultTest that is not a mapping",
            where=where,
            hint=_HINT,
        )
    # the bounds on a generator's tests (count, size, plain data): a hook returns tests as one does
    from evalh.config.generators import checked_tests  # (a config without a beforeAll hook never asks)

    tests = checked_tests(tests, f"extension {ref} (beforeAll) suite.tests:", where, _HINT)
    return {"suite": {**sent["suite"], "tests": tests, "defaultTest": dict(default)}}


def _tests_after(
    returned: list[Any], sent: list[Any], raw_tests: list[RawTest], shown: str, ctx: LoadContext
) -> list[RawTest]:
    """Tests the hook left as they were keep their place in their files; the others are checked."""
    from evalh.config.generators import GeneratorOrigin

    tests: list[RawTest] = []
    for position, test in enumerate(returned):
        if position < len(sent) and test == sent[position]:
            tests.append(raw_tests[position])
        else:
            origin: Origin = GeneratorOrigin(shown, position, called="(beforeAll).suite.tests")
            tests.extend(validated_tests([(test, origin)], position, ctx))
    return tests


def _checked_default(default: Mapping[str, Any], where: Where, ctx: LoadContext) -> dict[str, Any]:
    problems = drop_unknown_keys(
        defs_checker("test").problems(default), default, lambda path: format_path(path)
    )
    for problem in problems:
        at = f"{where} (defaultTest returned by beforeAll, at {format_path(problem.path) or 'its top'})"
        ctx.problems.add(problem.message, where=at, hint=problem.hint, kind=SchemaError)
    return dict(default)
