"""Validation of a test's transform options (the transforms themselves: evalh/runtimes/transforms.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evalh.config.files import LoadContext
from evalh.runtimes.transforms import OUTPUT_TRANSFORM_KEYS, REFUSED_OPTION_KEYS, transform_problem

__all__ = ["check_test_transforms"]


def check_test_transforms(options: Mapping[str, Any], where: Callable[[str], str], ctx: LoadContext) -> None:
    """options.transform / postprocess must be usable code; keys evalh does not run are refused."""
    for key, why in REFUSED_OPTION_KEYS.items():
        if key in options:
            ctx.problems.add(f"options.{key} is not supported", where=where(key), hint=why)
    for key in OUTPUT_TRANSFORM_KEYS:
        if key in options:
            problem = transform_problem(options[key], ctx.base_dir)
            if problem:
                ctx.problems.add(f"options.{key}: {problem}", where=where(key))
