"""One row of the provider registry (:mod:`evalh.providers.registry`): the id or id prefix it serves, the
``module:function`` that builds it, its capabilities, its key check and how its answers may be cached."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalh.model import ProviderSpec
from evalh.providers.keys import MissingKey

__all__ = ["PATH_PATTERN", "ProviderEntry", "file_part"]

# The pattern of an entry that matches a file path by its suffix alone (promptfoo's `./provider.js`)
PATH_PATTERN = "<path to a .js/.ts file>"


@dataclass(frozen=True)
class ProviderEntry:
    pattern: str  # exact id, or a prefix ending in ":" or "://"
    target: str  # "module:function", called with the ProviderSpec
    capabilities: tuple[str, ...]  # among "text", "embedding", "similarity", "tokens"
    description: str
    example: str
    # whether a provider of this id would lack its API key (evalh.providers.keys); None: it needs none
    key_check: Callable[[ProviderSpec], MissingKey | None] | None = None
    # whether its answers may come from the completion cache: "never" (scripts, echo), "opt-in" (only
    # with config.cache: true, as the http provider), "default" (the API families, unless they sample)
    caching: str = "never"
    # with suffixes, the id must also name a file ending in one (any case; ``:Name`` after it names an
    # export): promptfoo routes ``file://x.js`` by its suffix, and takes a bare path ending in one
    suffixes: tuple[str, ...] = ()

    @property
    def is_prefix(self) -> bool:
        return self.pattern.endswith((":", "://"))

    @property
    def specificity(self) -> tuple[bool, int, bool]:
        """Among the entries matching an id, the greatest wins: exact ids, then longer prefixes, then
        those that also check the suffix; a bare path is the last resort (``openai:x.js`` is a model)."""
        if self.pattern == PATH_PATTERN:
            return (False, 0, True)
        return (not self.is_prefix, len(self.pattern), bool(self.suffixes))

    def matches(self, provider_id: str) -> bool:
        if self.suffixes:
            starts = self.pattern == PATH_PATTERN or provider_id.startswith(self.pattern)
            return starts and file_part(provider_id).lower().endswith(self.suffixes)
        if self.is_prefix:
            return provider_id.startswith(self.pattern) and len(provider_id) > len(self.pattern)
        return provider_id == self.pattern


def file_part(provider_id: str) -> str:
    """``file://x.js:Name`` -> ``file://x.js``: a trailing export name is not part of the path."""
    path, sep, name = provider_id.rpartition(":")
    return path if sep and name.isidentifier() else provider_id
