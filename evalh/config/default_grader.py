"""promptfoo's default grader: the judge a model-graded assertion uses when the config names none.

promptfoo 0.123 (``getDefaultProviderPreferences`` in src/providers/defaults.ts) picks it by the API keys
in the environment: OpenAI when ``OPENAI_API_KEY`` is set, else Anthropic, else Google AI Studio, else
Mistral, else xAI, else OpenAI again (whose missing key then makes each judged row an ERROR). evalh follows
it, so a promptfoo config with ``llm-rubric`` and no ``provider`` runs as it does there; the run says which
grader it picked and why. A family evalh does not serve (yet) is skipped, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalh.common.environment import getenv
from evalh.model import ProviderChoice, ProviderSpec
from evalh.providers.registry import find_entry

__all__ = ["DefaultGrader", "default_grader"]


@dataclass(frozen=True)
class DefaultGrader:
    choice: ProviderChoice  # judges only: embeddings keep evalh's bundled local model
    because: str  # why this one, for the notice


# (key variables, provider id) in promptfoo's order of preference; the models are promptfoo 0.123's.
_PREFERENCE: tuple[tuple[tuple[str, ...], str], ...] = (
    (("OPENAI_API_KEY",), "openai:chat:gpt-5.6-sol"),
    (("ANTHROPIC_API_KEY",), "anthropic:messages:claude-sonnet-4-6"),
    (("GEMINI_API_KEY", "GOOGLE_API_KEY", "PALM_API_KEY"), "google:gemini-3.8-flash"),
    (("MISTRAL_API_KEY",), "mistral:mistral-large-latest"),
    (("XAI_API_KEY",), "xai:grok-4.3"),
)


def default_grader() -> DefaultGrader:
    """The grader promptfoo would use here, read from the run's environment (``.env`` and the config's
    ``env:`` applied)."""
    for envars, provider_id in _PREFERENCE:
        found = next((name for name in envars if getenv(name)), None)
        if found is not None and find_entry(provider_id) is not None:
            return DefaultGrader(_choice(provider_id), f"{found} is set")
    openai_id = _PREFERENCE[0][1]
    return DefaultGrader(_choice(openai_id), "no grader's API key is set, so its rows will be ERRORs")


def _choice(provider_id: str) -> ProviderChoice:
    return ProviderChoice(text=ProviderSpec(id=provider_id, path="promptfoo's default grader"))
