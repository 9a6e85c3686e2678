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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the type checker sees them; at run time __getattr__ imports their module
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

# Each name's module, imported when the name is first asked for (``from evalh.model import Suite``): a
# command imports the classes it uses, not all ~40 (making a dataclass costs ~0.3 ms; validate needs no
# run record, aggregate or repeat summary).
_HOMES: dict[str, str] = {
    "Aggregates": "evalh.model.aggregates",
    "Column": "evalh.model.aggregates",
    "NamedTotal": "evalh.model.aggregates",
    "RowFigures": "evalh.model.aggregates",
    "RunRecord": "evalh.model.aggregates",
    "ScoreStats": "evalh.model.aggregates",
    "TypeFigures": "evalh.model.aggregates",
    "CacheMode": "evalh.model.caching",
    "CacheShare": "evalh.model.caching",
    "CONVERSATION_VAR": "evalh.model.matrix",
    "RECORDED_PROMPT": "evalh.model.matrix",
    "RECORDED_PROVIDER": "evalh.model.matrix",
    "STORE_KEY": "evalh.model.matrix",
    "narrows_matrix": "evalh.model.matrix",
    "prompt_allowed": "evalh.model.matrix",
    "prompt_warning_key": "evalh.model.matrix",
    "provider_ref_matches": "evalh.model.matrix",
    "ref_matches": "evalh.model.matrix",
    "run_placeholders": "evalh.model.matrix",
    "runs_prompt": "evalh.model.matrix",
    "stored_names": "evalh.model.matrix",
    "uses_conversation": "evalh.model.matrix",
    "DEFAULT_ALPHA": "evalh.model.options",
    "Filters": "evalh.model.options",
    "RunOptions": "evalh.model.options",
    "Shard": "evalh.model.options",
    "RepeatSummary": "evalh.model.repeats",
    "TestRepeats": "evalh.model.repeats",
    "NO_USAGE": "evalh.model.results",
    "RETURNED_COMPONENTS": "evalh.model.results",
    "AssertionResult": "evalh.model.results",
    "GradedAssertion": "evalh.model.results",
    "Measurement": "evalh.model.results",
    "PassFail": "evalh.model.results",
    "pass_fail": "evalh.model.results",
    "ProviderResponse": "evalh.model.results",
    "ProviderUsage": "evalh.model.results",
    "RowRating": "evalh.model.results",
    "Status": "evalh.model.results",
    "TestResult": "evalh.model.results",
    "Usage": "evalh.model.results",
    "weighted_mean": "evalh.model.results",
    "RECORDED_PROVIDER_ID": "evalh.model.suite",
    "AssertionSpec": "evalh.model.suite",
    "Prompt": "evalh.model.suite",
    "ProviderChoice": "evalh.model.suite",
    "ProviderSpec": "evalh.model.suite",
    "ShardInfo": "evalh.model.suite",
    "Suite": "evalh.model.suite",
    "TestCase": "evalh.model.suite",
    "asks_provider": "evalh.model.suite",
    "meets": "evalh.model.thresholds",
    "DEFAULT_OTLP_PORT": "evalh.model.trace",
    "RowTrace": "evalh.model.trace",
    "Span": "evalh.model.trace",
    "TraceContext": "evalh.model.trace",
    "TraceSource": "evalh.model.trace",
    "TracingSettings": "evalh.model.trace",
    "VarScript": "evalh.model.var_scripts",
    "plain_vars": "evalh.model.var_scripts",
    "script_var_names": "evalh.model.var_scripts",
    "pass_rate": "evalh.model.verdict",
    "run_passed": "evalh.model.verdict",
}


# evalh.common.lazy_names makes this function for evalh and evalh.store; model, a leaf package, imports
# nothing of evalh outside itself (docs/architecture.md rule 2), so it spells the same few lines here.
if not TYPE_CHECKING:  # hidden from the type checker, which would accept any name through it

    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'evalh.model' has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # asked once: later lookups find it without this call
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


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
