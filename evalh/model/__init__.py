"""The data evalh passes between its layers: frozen dataclasses, no behaviour beyond small derivations.

A leaf package: it imports nothing of evalh outside itself, so every other module may import it.
Import from here (``from evalh.model import Suite``); the submodules only group the classes:

* :mod:`evalh.model.suite`: the config side (:class:`Suite`, :class:`TestCase`, :class:`AssertionSpec`,
  :class:`Prompt`, :class:`ProviderSpec`, :class:`ProviderChoice`);
* :mod:`evalh.model.options`: how a run goes (:class:`RunOptions`, :class:`Filters`, :class:`Shard`);
* :mod:`evalh.model.verdict`: the whole run's verdict and pass rate (:func:`run_passed`, :func:`pass_rate`);
* :mod:`evalh.model.results`: providers' replies, assertions' measurements and verdicts, one
  :class:`TestResult` row (:class:`ProviderResponse`, :class:`Usage`, :class:`Measurement`,
  :class:`AssertionResult`, :class:`GradedAssertion`, :class:`Status`);
* :mod:`evalh.model.caching`: how a run used the cache (:class:`CacheMode`, :class:`CacheShare`);
* :mod:`evalh.model.matrix`: the run matrix's rules that the loader and the runner share (which prompts
  a test runs against, the recorded-output column, the vars only a run sets);
* :mod:`evalh.model.aggregates`: a finished :class:`RunRecord` and its figures (:class:`Aggregates`,
  :class:`Column`, :class:`RowFigures`, ...);
* :mod:`evalh.model.repeats`: each test over its repeats (:class:`RepeatSummary`, :class:`TestRepeats`);
* :mod:`evalh.model.var_scripts`: vars run for their value when a row renders (:class:`VarScript`);
* :mod:`evalh.model.trace`: a row's OpenTelemetry spans and the run's tracing settings (:class:`Span`,
  :class:`RowTrace`, :class:`TraceContext`, :class:`TracingSettings`).

Flow: ``config`` builds a :class:`Suite` (prompts, providers, tests with their merged, rendered
assertions); ``runner`` turns it into :class:`TestResult` rows holding :class:`GradedAssertion` trees;
``reports`` read a :class:`RunRecord`.
"""

from __future__ import annotations

from evalh.model.aggregates import (
    Aggregates,
    Column,
    NamedTotal,
    RowFigures,
    RunRecord,
    ScoreStats,
    TypeFigures,
)
from evalh.model.caching import CacheMode, CacheShare
from evalh.model.matrix import (
    CONVERSATION_VAR,
    RECORDED_PROMPT,
    RECORDED_PROVIDER,
    STORE_KEY,
    narrows_matrix,
    prompt_allowed,
    prompt_warning_key,
    provider_ref_matches,
    ref_matches,
    run_placeholders,
    runs_prompt,
    stored_names,
    uses_conversation,
)
from evalh.model.options import DEFAULT_ALPHA, Filters, RunOptions, Shard
from evalh.model.repeats import RepeatSummary, TestRepeats
from evalh.model.results import (
    NO_USAGE,
    RETURNED_COMPONENTS,
    AssertionResult,
    GradedAssertion,
    Measurement,
    PassFail,
    ProviderResponse,
    ProviderUsage,
    RowRating,
    Status,
    TestResult,
    Usage,
    pass_fail,
    weighted_mean,
)
from evalh.model.suite import (
    RECORDED_PROVIDER_ID,
    AssertionSpec,
    Prompt,
    ProviderChoice,
    ProviderSpec,
    ShardInfo,
    Suite,
    TestCase,
    asks_provider,
)
from evalh.model.thresholds import meets
from evalh.model.trace import (
    DEFAULT_OTLP_PORT,
    RowTrace,
    Span,
    TraceContext,
    TraceSource,
    TracingSettings,
)
from evalh.model.var_scripts import VarScript, plain_vars, script_var_names
from evalh.model.verdict import pass_rate, run_passed

__all__ = [
    "CONVERSATION_VAR",
    "DEFAULT_ALPHA",
    "DEFAULT_OTLP_PORT",
    "NO_USAGE",
    "RECORDED_PROMPT",
    "RECORDED_PROVIDER",
    "RECORDED_PROVIDER_ID",
    "RETURNED_COMPONENTS",
    "STORE_KEY",
    "Aggregates",
    "AssertionResult",
    "AssertionSpec",
    "CacheMode",
    "CacheShare",
    "Column",
    "Filters",
    "GradedAssertion",
    "Measurement",
    "NamedTotal",
    "PassFail",
    "Prompt",
    "ProviderChoice",
    "ProviderResponse",
    "ProviderSpec",
    "ProviderUsage",
    "RepeatSummary",
    "RowFigures",
    "RowRating",
    "RowTrace",
    "RunOptions",
    "RunRecord",
    "ScoreStats",
    "Shard",
    "ShardInfo",
    "Span",
    "Status",
    "Suite",
    "TestCase",
    "TestRepeats",
    "TestResult",
    "TraceContext",
    "TraceSource",
    "TracingSettings",
    "TypeFigures",
    "Usage",
    "VarScript",
    "asks_provider",
    "meets",
    "narrows_matrix",
    "pass_fail",
    "pass_rate",
    "plain_vars",
    "prompt_allowed",
    "prompt_warning_key",
    "provider_ref_matches",
    "ref_matches",
    "run_passed",
    "run_placeholders",
    "runs_prompt",
    "script_var_names",
    "stored_names",
    "uses_conversation",
    "weighted_mean",
]
