"""A test's ``prompts:`` (and defaultTest's), and a provider's, checked at load as promptfoo checks them
(``src/util/validateTestPromptReferences.ts``), and a test's ``providers:`` as promptfoo checks it
(``validateTestProviderReferences.ts``). Which prompts (providers) an entry names is a run-matrix rule the
runner shares: evalh/model/matrix.py (:func:`~evalh.model.ref_matches`).

A test's entry that names no prompt of the config is a located error, as in promptfoo; a provider's
is a located warning (promptfoo runs that provider on no prompt). Rows keep the prompt's index in the
whole config, so reports line up with ``prompts:``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evalh.common.notices import warn
from evalh.config.files import LoadContext, Origin
from evalh.config.locate import JsonPath
from evalh.config.tests_files import RawTest
from evalh.errors import ConfigError
from evalh.model import Prompt, ProviderSpec, provider_ref_matches, ref_matches

__all__ = ["check_prompt_refs", "check_provider_prompt_refs", "check_provider_refs", "merged_prompt_refs"]

_LISTED = 12  # prompts named in the error before "and N more"
_SHOWN = 60  # characters of each label in the hint


def merged_prompt_refs(data: Any, default: Any, key: str = "prompts") -> tuple[str, ...] | None:
    """A test's prompt entries (``key="providers"``: provider entries) after the defaultTest merge (the
    test's own win), or None for all."""
    refs = data.get(key) if key in data else default.get(key)
    return None if refs is None else tuple(str(ref) for ref in refs)


def check_prompt_refs(
    raw_tests: Sequence[RawTest],
    default: Any,
    default_origin: Origin | None,
    prompts: Sequence[Prompt],
    ctx: LoadContext,
) -> None:
    """Every entry of defaultTest's and each test's ``prompts:`` must name a prompt of the config."""
    if default_origin is not None:
        _check(default.get("prompts"), default_origin, ("defaultTest",), prompts, ctx)
    for position, raw in enumerate(raw_tests):
        if raw.valid:
            _check(raw.data.get("prompts"), raw.origin, raw.shown or ("tests", position), prompts, ctx)


def check_provider_refs(
    raw_tests: Sequence[RawTest],
    default: Any,
    default_origin: Origin | None,
    providers: Sequence[ProviderSpec],
    ctx: LoadContext,
) -> None:
    """Every entry of defaultTest's and each test's ``providers:`` must name a provider of the config
    (promptfoo's ``validateTestProviderReferences`` refuses the config otherwise)."""
    if default_origin is not None:
        _check_providers(default.get("providers"), default_origin, ("defaultTest",), providers, ctx)
    for position, raw in enumerate(raw_tests):
        if raw.valid:
            shown = raw.shown or ("tests", position)
            _check_providers(raw.data.get("providers"), raw.origin, shown, providers, ctx)


def _check_providers(
    refs: Any, origin: Origin, shown: JsonPath, providers: Sequence[ProviderSpec], ctx: LoadContext
) -> None:
    for index, ref in enumerate(refs or ()):
        if any(provider_ref_matches(str(ref), provider) for provider in providers):
            continue
        names = sorted({provider.display for provider in providers})
        listed = ", ".join(repr(name) for name in names[:_LISTED]) or "(none)"
        ctx.problems.add(
            f"providers[{index}] names the provider {ref!r}, which the config does not have",
            where=ctx.where(origin, ("providers", index), (*shown, "providers", index)),
            hint=f"Name a provider by its label or id, or a prefix ending in * (openai:*): {listed}",
        )


def check_provider_prompt_refs(
    providers: Sequence[ProviderSpec], prompts: Sequence[Prompt], ctx: LoadContext
) -> None:
    """A provider's ``prompts:`` entry that names no prompt is a located warning (an error with
    --strict): promptfoo silently runs that provider on fewer prompts."""
    for provider in providers:
        where = ctx.where_of.get(id(provider), provider.path)
        for index, ref in enumerate(provider.prompts or ()):
            if any(ref_matches(ref, prompt) for prompt in prompts):
                continue
            unmatched = ConfigError(
                f"prompts[{index}] names the prompt {ref!r}, which the config does not have, so "
                f"{provider.display} runs no prompt for it",
                where=where,
                hint=f"Name a prompt by its id or its label: {_labels(prompts)}",
            )
            try:
                warn(unmatched, where=where, subject=f"provider prompt {ref}")
            except ConfigError as error:  # --strict: reported with the config's other problems
                ctx.problems.add_exception(error)


def _check(refs: Any, origin: Origin, shown: JsonPath, prompts: Sequence[Prompt], ctx: LoadContext) -> None:
    for index, ref in enumerate(refs or ()):
        if any(ref_matches(str(ref), prompt) for prompt in prompts):
            continue
        ctx.problems.add(
            f"prompts[{index}] names the prompt {ref!r}, which the config does not have",
            where=ctx.where(origin, ("prompts", index), (*shown, "prompts", index)),
            hint=f"Name a prompt by its id or its label: {_labels(prompts)}",
        )


def _labels(prompts: Iterable[Prompt]) -> str:
    names = sorted({prompt.label for prompt in prompts})
    # a label is a prompt's whole text: the hint shows the start of each, enough to tell them apart
    shown = ", ".join(repr(name if len(name) <= _SHOWN else name[:_SHOWN] + "…") for name in names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "") or "(none)"
