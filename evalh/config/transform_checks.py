"""Validation of a test's transform options (the transforms themselves: evalh/runtimes/transforms.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evalh.config.files import LoadContext
from evalh.runtimes.transforms import (
    OUTPUT_TRANSFORM_KEYS,
    VARS_TRANSFORM_KEY,
    transform_problem,
    vars_transform_problem,
)

__all__ = ["check_test_transforms"]


def check_test_transforms(options: Mapping[str, Any], where: Callable[[str], str], ctx: LoadContext) -> None:
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
