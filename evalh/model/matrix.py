"""The run matrix's rules: which prompts a test runs against, the recorded-output column, and the vars
only a run sets (stored outputs, ``_conversation``).

The loader (config/) checks a config against these rules and the runner (runner/plan.py,
runner/sequence.py, runner/sharding.py) plans and runs by them, so they live here, below both: the
runner imports nothing of config (docs/architecture.md).

Prompt references, as promptfoo matches them (``src/util/promptMatching.ts``): an entry names a prompt
by its label or id exactly; ``Group:*`` names every prompt whose label or id starts with ``Group:`` (any
prefix before a final ``*``); ``Group`` also names the prompts labelled ``Group:...`` (the labels of a
prompt file's parts). An empty list runs the test against no prompt.

Provider references (a test's ``providers:``, as promptfoo's ``isProviderAllowed`` matches them): an entry
names a provider by its label or id exactly; ``openai:*`` names every provider whose label or id starts
with ``openai:`` (any prefix before a final ``*``); ``openai`` also names the providers whose label or id
starts with ``openai:``. An empty list runs the test on no provider: it makes no row at all.

Stored outputs: promptfoo stores each output of a test with ``options.storeOutputAs: NAME`` as the var
NAME of every test run after it, and gives a prompt that mentions ``_conversation`` its earlier turns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalh.model.suite import RECORDED_PROVIDER_ID, Prompt, ProviderSpec, TestCase

__all__ = [
    "CONVERSATION_VAR",
    "RECORDED_PROMPT",
    "RECORDED_PROVIDER",
    "STORE_KEY",
    "narrows_matrix",
    "prompt_allowed",
    "prompt_warning_key",
    "provider_ref_matches",
    "ref_matches",
    "run_placeholders",
    "runs_prompt",
    "stored_names",
    "uses_conversation",
]

# The column of a config without prompts and providers: every test grades its recorded output.
RECORDED_PROVIDER = ProviderSpec(id=RECORDED_PROVIDER_ID, label="recorded", path="(recorded outputs)")
RECORDED_PROMPT = Prompt(raw="", label="recorded")

STORE_KEY = "storeOutputAs"
CONVERSATION_VAR = "_conversation"  # promptfoo's var of a prompt's earlier turns (runner/sequence.py)


def _names(ref: str, names: tuple[str | None, ...]) -> bool:
    """promptfoo's matching of one entry against a prompt's or a provider's label and id."""
    present = [name for name in names if name]
    if ref in present:
        return True
    if ref.endswith("*") and any(name.startswith(ref[:-1]) for name in present):
        return True
    return any(name.startswith(f"{ref}:") for name in present)


def ref_matches(ref: str, prompt: Prompt) -> bool:
    """Whether one entry of a test's (or a provider's) ``prompts:`` names ``prompt``."""
    return _names(ref, (prompt.label, prompt.id))


def _allows(refs: tuple[str, ...] | None, prompt: Prompt) -> bool:
    return refs is None or any(ref_matches(ref, prompt) for ref in refs)


def prompt_allowed(test: TestCase, prompt: Prompt) -> bool:
    """Whether ``test`` runs against ``prompt`` (every prompt when it names none)."""
    return _allows(test.prompts, prompt)


def provider_ref_matches(ref: str, provider: ProviderSpec) -> bool:
    """Whether one entry of a test's ``providers:`` names ``provider``."""
    return _names(ref, (provider.label, provider.id))


def _allows_provider(refs: tuple[str, ...] | None, provider: ProviderSpec) -> bool:
    return refs is None or any(provider_ref_matches(ref, provider) for ref in refs)


def runs_prompt(test: TestCase, provider: ProviderSpec, prompt: Prompt) -> bool:
    """Whether the run has a row for ``test`` with ``prompt`` on ``provider``."""
    return (
        _allows(test.prompts, prompt)
        and _allows(provider.prompts, prompt)
        and _allows_provider(test.providers, provider)
    )


def narrows_matrix(test: TestCase) -> bool:
    """Whether ``test`` runs on fewer than every prompt x provider (its ``prompts:`` or ``providers:``)."""
    return test.prompts is not None or test.providers is not None


def prompt_warning_key(prompt: Prompt, index: int) -> str:
    """The place an undefined-variable warning about a prompt is given once for (when the config is
    loaded, when the run is planned and when the prompt is rendered for each test)."""
    return prompt.path or f"prompts[{index}]"


def stored_names(options: Iterable[Any]) -> frozenset[str]:
    """The names some test's (or defaultTest's) ``options.storeOutputAs`` stores outputs under."""
    return frozenset(
        str(option[STORE_KEY])
        for option in options
        if isinstance(option, Mapping) and isinstance(option.get(STORE_KEY), str)
    )


def uses_conversation(prompt: Prompt) -> bool:
    """promptfoo's test: the raw prompt mentions ``_conversation``."""
    text = prompt.raw if isinstance(prompt.raw, str) else json.dumps(prompt.raw)
    return CONVERSATION_VAR in text


def run_placeholders(tests: Sequence[TestCase], prompts: Sequence[Prompt]) -> dict[str, Any]:
    """Stand-ins for the vars only a run sets (stored outputs, ``_conversation``), so that rendering
    prompts while planning does not call them undefined."""
    values: dict[str, Any] = dict.fromkeys(stored_names(test.options for test in tests), "")
    if any(uses_conversation(prompt) for prompt in prompts):
        values[CONVERSATION_VAR] = []
    return values
