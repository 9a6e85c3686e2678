"""Every assertion type, registered with ``@assertion`` into one plain dict, metadata beside the code.

``evalh list assertions``, the schema's enum of types and per-type value rules (both tested equal) and
``validate`` read this registry.
Families are imported on first use by :func:`all_assertions`, so ``evalh --help`` imports none of them.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from evalh.assertions.base import AssertionContext, EmbedRequest
from evalh.model import AssertionResult, Measurement

__all__ = [
    "FAMILY_MODULES",
    "NONEMPTY_TEXT",
    "AssertionDef",
    "AssertionFn",
    "CheckFn",
    "CodeLanguage",
    "Direction",
    "all_assertions",
    "assertion",
    "base_type",
    "get_assertion",
]

Outcome = AssertionResult | Measurement
AssertionFn = Callable[[AssertionContext], Outcome | Awaitable[Outcome]]
Direction = Literal["higher", "lower"]  # which way of the threshold passes
PrefetchFn = Callable[[AssertionContext], Sequence[EmbedRequest]]
CheckFn = Callable[[Any, Mapping[str, Any]], str | None]  # (value, config) -> problem or None
CodeLanguage = Literal["python", "javascript"]

# A value_schema shared by several families: a regex, code, or a file:// path.
NONEMPTY_TEXT: Mapping[str, Any] = {"type": "string", "minLength": 1}

# The modules that register assertions, imported on first lookup.
FAMILY_MODULES: tuple[str, ...] = (
    "evalh.assertions.text",
    "evalh.assertions.structured",
    "evalh.assertions.sql",
    "evalh.assertions.scripted",
    "evalh.assertions.javascript",
    "evalh.assertions.runtime",
    "evalh.assertions.grouping",
    "evalh.assertions.similarity",
    "evalh.assertions.bertscore",
    "evalh.assertions.judged",
    "evalh.assertions.lexical",
    "evalh.assertions.retrieval",
    "evalh.assertions.ordinal",
    "evalh.assertions.citation",
)


@dataclass(frozen=True)
class AssertionDef:
    """An assertion type and what the rest of evalh needs to know about it."""

    name: str
    fn: AssertionFn
    family: str
    description: str
    needs: tuple[str, ...] = ()  # "embedding", "text": the providers it calls
    default_threshold: float | None = None
    threshold_meaning: str = ""  # "min score", "max distance", ... (docs)
    requires_value: bool = False
    requires_threshold: bool = False  # e.g. latency: validate reports a missing threshold
    # The value's shape as a JSON Schema fragment, declared once here: validate checks every value
    # against it, and the config schema's per-type ``allOf`` rule is tested equal to it.
    value_schema: Mapping[str, Any] | None = None
    check: CheckFn | None = None  # static check of (value, config), beyond its shape, run by validate
    prefetch: PrefetchFn | None = None  # texts to embed in bulk before scoring
    # The handler returns a Measurement compared with the threshold this way (scoring.py); a type
    # without one is pass/fail (its measurement is 1 or 0, or carries a verdict) and takes no threshold.
    direction: Direction | None = None
    bounds: tuple[float | None, float | None] = (None, None)  # where the measured value lies
    binary_score: bool = False  # the score is 1 on a pass, else 0 (a distance, milliseconds)
    # The value is code in this language: never rendered as a template (evalh/config/code_values.py)
    code_language: CodeLanguage | None = None

    @property
    def threshold_applies(self) -> bool:
        return self.direction is not None

    def threshold_problem(self, threshold: float) -> str | None:
        """Why ``threshold`` cannot work for this type (outside the measured value's bounds), or None."""
        if not math.isfinite(threshold):
            return f"threshold must be a finite number (got {threshold})"
        low, high = self.bounds
        if self.direction == "higher" and high is not None and threshold > high:
            return f"threshold must be <= {high:g} (got {threshold:g}): the score never exceeds {high:g}"
        if self.direction == "lower" and low is not None and threshold < low:
            meaning = self.threshold_meaning or "value"
            return f"threshold must be >= {low:g} (got {threshold:g}): a {meaning} is never below {low:g}"
        return None


_REGISTRY: dict[str, AssertionDef] = {}
_loaded = False

F = TypeVar("F", bound=AssertionFn)


def assertion(
    name: str,
    *,
    family: str,
    description: str,
    needs: tuple[str, ...] = (),
    default_threshold: float | None = None,
    threshold_meaning: str = "",
    requires_value: bool = False,
    requires_threshold: bool = False,
    value_schema: Mapping[str, Any] | None = None,
    check: CheckFn | None = None,
    prefetch: PrefetchFn | None = None,
    direction: Direction | None = None,
    bounds: tuple[float | None, float | None] = (None, None),
    binary_score: bool = False,
    code_language: CodeLanguage | None = None,
) -> Callable[[F], F]:
    """Register the decorated function as the handler of assertion type ``name``."""

    def register(fn: F) -> F:
        if name in _REGISTRY:
            raise RuntimeError(f"assertion type {name!r} is registered twice")
        _REGISTRY[name] = AssertionDef(
            name=name,
            fn=fn,
            family=family,
            description=description,
            needs=needs,
            default_threshold=default_threshold,
            threshold_meaning=threshold_meaning,
            requires_value=requires_value,
            requires_threshold=requires_threshold,
            value_schema=value_schema,
            check=check,
            prefetch=prefetch,
            direction=direction,
            bounds=bounds,
            binary_score=binary_score,
            code_language=code_language,
        )
        return fn

    return register


def _load_families() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in FAMILY_MODULES:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as error:
                # A family that is not installed in this build registers nothing; any other
                # missing import inside a family is a real bug and propagates.
                if error.name != module:
                    raise


def all_assertions() -> dict[str, AssertionDef]:
    """Every registered type, by name (base types only; ``not-`` applies to all)."""
    _load_families()
    return dict(sorted(_REGISTRY.items()))


def get_assertion(name: str) -> AssertionDef | None:
    _load_families()
    return _REGISTRY.get(name)


def base_type(full_type: str) -> tuple[str, bool]:
    """``not-contains`` -> ("contains", True)."""
    if full_type.startswith("not-"):
        return full_type[4:], True
    return full_type, False
