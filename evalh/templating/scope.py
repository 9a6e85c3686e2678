"""What a render reads beside its variables, set by whoever renders: the suite's ``nunjucksFilters`` and
the list collecting the undefined names one render met. A leaf without Jinja, so a run whose templates
all take the fast path (evalh.templating) sets them without importing the engine."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

__all__ = ["MISSING_NAMES", "USER_FILTERS", "user_filters"]

# The undefined names one render met, for its warnings (renders run in worker threads too).
MISSING_NAMES: ContextVar[list[str] | None] = ContextVar("evalh_template_undefined", default=None)

# The config's nunjucksFilters for the renders of the suite being loaded or run (name -> callable).
USER_FILTERS: ContextVar[Mapping[str, Callable[..., Any]]] = ContextVar(
    "evalh_user_filters", default=types.MappingProxyType({})
)


@contextlib.contextmanager
def user_filters(filters: Mapping[str, Callable[..., Any]]) -> Iterator[None]:
    """Renders inside see ``filters`` (a suite's ``nunjucksFilters``) as template filters."""
    token = USER_FILTERS.set(filters)
    try:
        yield
    finally:
        USER_FILTERS.reset(token)
