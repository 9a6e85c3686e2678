"""A config's transforms at load: their checks (no code runs) and ``options.transformVars``, which runs
when the config is loaded to run (the transforms themselves: evalh/runtimes/transforms.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S
from evalh.common.notices import warn
from evalh.config.files import LoadContext
from evalh.errors import ConfigError, Where
from evalh.runtimes.transforms import (
    OUTPUT_TRANSFORM_KEYS,
    VARS_TRANSFORM_KEY,
    TransformFailed,
    transform_problem,
    transform_vars,
    vars_transform_problem,
)

__all__ = ["check_test_transforms", "transformed_vars", "unused_context_transform"]


def check_test_transforms(
    options: Mapping[str, Any], where: Callable[[str], Where], ctx: LoadContext
) -> None:
    """options.transform / postprocess / transformVars must be usable code (none of it runs here)."""
    for key in OUTPUT_TRANSFORM_KEYS:
        if key in options:
            problem = transform_problem(options[key], ctx.base_dir)
            if problem:
                ctx.problems.add(f"options.{key}: {problem}", where=where(key))
    if VARS_TRANSFORM_KEY in options:
        problem = vars_transform_problem(options[VARS_TRANSFORM_KEY], ctx.base_dir)
        if problem:
            ctx.problems.add(f"options.{VARS_TRANSFORM_KEY}: {problem}", where=where(VARS_TRANSFORM_KEY))


def transformed_vars(
    variables: dict[str, Any], options: Mapping[str, Any], where: Callable[[str], Where], ctx: LoadContext
) -> dict[str, Any]:
    """The vars with ``options.transformVars``' result merged over them, as promptfoo merges it. Only
    when the config is loaded to run (validate runs no code); the values it returns are data, never
    rendered, and the prompts and assertion values render with them."""
    code = options.get(VARS_TRANSFORM_KEY)
    if not ctx.run_transforms or not isinstance(code, str) or vars_transform_problem(code, ctx.base_dir):
        return variables  # not run, or a problem check_test_transforms reports
    try:
        changed = transform_vars(code, variables, config_dir=ctx.base_dir, timeout_s=JAVASCRIPT_TIMEOUT_S)
    except TransformFailed as error:
        raise ConfigError(
            f"the vars transform {error}",
            where=where(VARS_TRANSFORM_KEY),
            hint="transformVars gets (vars, context) and returns the vars to merge; no row has run",
        ) from None
    return {**variables, **changed}


def unused_context_transform(kind: str, where: Where) -> None:
    """promptfoo ignores a contextTransform on an assertion that reads no context: say so."""
    from evalh.assertions.judged_rag import CONTEXT_TYPES  # a family: imported when a config has one

    if kind in CONTEXT_TYPES:
        return
    message = f"contextTransform has no effect on {kind}: only {', '.join(CONTEXT_TYPES)} read a context"
    warn(ConfigError(message, where=where, hint="Remove it"), where=where, subject="contextTransform")
