"""The data evalh passes between its layers: frozen dataclasses, no behaviour beyond small derivations.

A leaf package: it imports nothing of evalh outside itself, so every other module may import it.
Import from here (``from evalh.model import Suite``); the submodules only group the classes:

* :mod:`evalh.model.suite`: the config side (:class:`Suite`, :class:`TestCase`, :class:`AssertionSpec`,
  :class:`Prompt`, :class:`ProviderSpec`, :class:`ProviderChoice`, :class:`EvaluateOptions`);
* :mod:`evalh.model.results`: providers' replies, assertions' measurements and verdicts, one
  :class:`TestResult` row (:class:`ProviderResponse`, :class:`Usage`, :class:`Measurement`,
  :class:`AssertionResult`, :class:`GradedAssertion`, :class:`Status`);
* :mod:`evalh.model.caching`: how a run used the cache (:class:`CacheMode`, :class:`CacheShare`);
* :mod:`evalh.model.matrix`: the run matrix's rules that the loader and the runner share (which prompts
  a test runs against, the recorded-output column, the vars only a run sets);
* :mod:`evalh.model.aggregates`: a finished :class:`RunResult` and its figures (:class:`Aggregates`,
  :class:`Column`, :class:`RowFigures`, ...).

Flow: ``config`` builds a :class:`Suite` (prompts, providers, tests with their merged, rendered
assertions); ``runner`` turns it into :class:`TestResult` rows holding :class:`GradedAssertion` trees;
``reports`` read a :class:`RunResult`.
"""

from __future__ import annotations

from evalh.model.aggregates import (
    Aggregates,
    Column,
    NamedTotal,
    RowFigures,
    RunResult,
    ScoreStats,
    TypeFigures,
)
from evalh.model.caching import CacheMode, CacheShare
from evalh.model.matrix import (
    CONVERSATION_VAR,
    RECORDED_PROMPT,
    RECORDED_PROVIDER,
    STORE_KEY,
    prompt_allowed,
    prompt_warning_key,
    ref_matches,
    run_placeholders,
    runs_prompt,
    stored_names,
    uses_conversation,
)
from evalh.model.results import (
    NO_USAGE,
    AssertionResult,
    GradedAssertion,
    Measurement,
    ProviderResponse,
    ProviderUsage,
    Status,
    TestResult,
    Usage,
    weighted_mean,
)
from evalh.model.suite import (
    RECORDED_PROVIDER_ID,
    AssertionSpec,
    EvaluateOptions,
    Prompt,
    ProviderChoice,
    ProviderSpec,
    ShardInfo,
    Suite,
    TestCase,
    asks_provider,
)

__all__ = [
    "CONVERSATION_VAR",
    "NO_USAGE",
    "RECORDED_PROMPT",
    "RECORDED_PROVIDER",
    "RECORDED_PROVIDER_ID",
    "STORE_KEY",
    "Aggregates",
    "AssertionResult",
    "AssertionSpec",
    "CacheMode",
    "CacheShare",
    "Column",
    "EvaluateOptions",
    "GradedAssertion",
    "Measurement",
    "NamedTotal",
    "Prompt",
    "ProviderChoice",
    "ProviderResponse",
    "ProviderSpec",
    "ProviderUsage",
    "RowFigures",
    "RunResult",
    "ScoreStats",
    "ShardInfo",
    "Status",
    "Suite",
    "TestCase",
    "TestResult",
    "TypeFigures",
    "Usage",
    "asks_provider",
    "prompt_allowed",
    "prompt_warning_key",
    "ref_matches",
    "run_placeholders",
    "runs_prompt",
    "stored_names",
    "uses_conversation",
    "weighted_mean",
]
