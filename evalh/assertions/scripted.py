"""The ``python`` assertion: your own Python code decides, with promptfoo's contract.

The value is inline code or ``file://path.py[:function]`` (default function ``get_assert``; the path is
relative to the config file's folder). Inline code that is one expression becomes
``return <expression>`` inside ``main(output, context)``; anything else is that function's body
(``json``, ``re`` and ``math`` are already imported for inline code).
The value is code, so it is never rendered as a template (``evalh/config/code_values.py``): it reads
vars as data, ``context['vars']['name']``.
The function gets the raw ``output`` and ``context = {prompt, vars, test, config, logProbs, provider,
providerResponse}`` (and, when the run traces, promptfoo's ``trace = {traceId, spans}``) and returns a bool,
a number (passes if > 0 without a threshold, else if >= threshold; the score is the number) or a dict
``{pass, score, reason}`` (``pass_`` accepted; with a threshold, a score must also reach it; its
``namedScores`` join the row's named scores, ``componentResults`` are kept in the details). An async
function is awaited. An exception in the user's code is an ERROR row naming the exception and the
line, never a traceback.

The code runs in a worker process (``evalh/runtimes/python.py``) with a timeout: ``config.timeout``
(seconds) or ``config.timeoutMs``, else ``evaluateOptions.timeoutMs``, else 30 s; a call that takes
longer is an ERROR row naming the timeout and its worker is killed. Each worker compiles inline code
once per text and loads a file once per version, so module state is per worker.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import NONEMPTY_TEXT, TIMEOUT_CONFIG, assertion
from evalh.assertions.trace_steps import status_number
from evalh.common.deadlines import PYTHON_ASSERTION_TIMEOUT_S, call_timeout_s, timeout_problem
from evalh.model import RETURNED_COMPONENTS, AssertionResult, Measurement, Span, TestCase
from evalh.runtimes.callables import CallFailed, call_function, lookup

if TYPE_CHECKING:
    from evalh.runtimes.python_worker import FileFunction, InlineCode, LoadProblem
# The Python worker's modules are imported by the check or call of a python assertion: loading the
# families (every run) does not load them.

__all__ = ["interpret_result", "returned_verdict", "script_context", "split_file_target"]

_DEFAULT_FUNCTION = "get_assert"


def split_file_target(value: str) -> tuple[str, str]:
    """``file://checks.py:grade`` -> ("checks.py", "grade"); the function defaults to get_assert."""
    target = value.removeprefix("file://")
    path, sep, function = target.rpartition(":")
    if sep and path.endswith(".py") and function.isidentifier():
        return path, function
    return target, _DEFAULT_FUNCTION


def _target(value: str, config_dir: Path | None) -> InlineCode | FileFunction:
    from evalh.runtimes.python_worker import FileFunction, InlineCode

    if not value.startswith("file://"):
        return InlineCode(value)
    shown, function = split_file_target(value)
    path = Path(shown).expanduser()
    if not path.is_absolute():
        path = (config_dir or Path.cwd()) / path
    return FileFunction(str(path), function, shown)


# --------------------------------------------------------------------------------- running code


def _test_dict(test: TestCase) -> dict[str, Any]:
    return {
        "description": test.description,
        "vars": dict(test.vars),
        "assert": [dict(spec.raw) or {"type": spec.full_type, "value": spec.value} for spec in test.asserts],
        "threshold": test.threshold,
        "options": dict(test.options),
        "metadata": dict(test.metadata),
    }


def _script_span(span: Span) -> dict[str, Any]:
    """A span as promptfoo hands it to user code (its trace store's ``serializeSpan``: times in ms)."""
    return {
        "spanId": span.span_id,
        "parentSpanId": span.parent_span_id,
        "name": span.name,
        "startTime": span.start_ns / 1e6,
        "endTime": None if span.end_ns is None else span.end_ns / 1e6,
        "attributes": dict(span.attributes),
        "statusCode": status_number(span),  # OTLP's numbers, as promptfoo's trace store keeps them
        "statusMessage": span.status_message or None,
    }


async def script_context(ctx: AssertionContext) -> dict[str, Any]:
    """promptfoo's ``context`` for user code, as plain data. The provider appears by id and label
    only: its config may hold secrets. A traced row adds ``trace`` (its spans, after the bounded wait
    for late ones), as promptfoo gives it to ``javascript`` and ``python`` assertions."""
    spec = ctx.provider_spec
    context: dict[str, Any] = {
        "prompt": ctx.prompt,
        "vars": dict(ctx.vars),
        "test": _test_dict(ctx.test),
        "config": dict(ctx.config),
        "logProbs": ctx.provider_metadata.get("logProbs"),
        "provider": {"id": spec.id, "label": spec.label} if spec else None,
        "providerResponse": {
            "output": ctx.output,
            "cached": ctx.cached,
            "cost": ctx.cost,
            "latencyMs": ctx.latency_ms,
            "metadata": dict(ctx.provider_metadata),
        },
    }
    if ctx.trace is not None:
        spans = await ctx.trace.spans()
        context["trace"] = {"traceId": ctx.trace.trace_id, "spans": [_script_span(span) for span in spans]}
    return context


def _plain(value: Any) -> Any:
    """numpy scalars (np.bool_, np.float32...) as Python values."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes | Mapping | list | tuple):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


def _number(value: Any) -> float | None:
    value = _plain(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _returned(
    score: float, why: str = "", user_reason: str = "", language: str = "Python", **details: Any
) -> Measurement:
    """A returned score for scoring.py: "Python assertion returned 0.4, which is less than threshold
    0.5", or without a threshold "..., which is greater than 0"."""
    subject = f"{language} assertion returned {why}{' with score ' if why else ''}{score:g}, which"
    return Measurement(
        value=score,
        subject=subject,
        suffix=f": {user_reason}" if user_reason else "",
        plain=user_reason or None,
        verdict=None,
        details=details,
    )


def returned_verdict(passed: bool, reason: str, **details: Any) -> Measurement:
    """The user's code returned a verdict without a score: it stands (a threshold has no score to
    compare), measured 1 or 0 for the row's score."""
    return Measurement(
        value=float(passed), subject=reason, plain=reason, verdict=passed, compared=False, details=details
    )


def _grading_extras(result: Mapping[str, Any], language: str) -> dict[str, Any] | str:
    """promptfoo's GradingResult extras: ``namedScores`` (metric -> number, merged into the row's
    named scores) and ``componentResults`` (kept in the details); a problem with them as text."""
    extras: dict[str, Any] = {}
    named = result.get("namedScores", result.get("named_scores"))
    if named is not None:
        scores = {str(k): _number(v) for k, v in named.items()} if isinstance(named, Mapping) else None
        if scores is None or any(v is None for v in scores.values()):
            return f"{language} assertion returned namedScores that are not numbers: {named!r}"
        extras["namedScores"] = scores
    components = result.get("componentResults", result.get("component_results"))
    if components is not None:
        kept = [_component(c) for c in components] if isinstance(components, list) else [None]
        if any(c is None for c in kept):
            return (
                f"{language} assertion returned componentResults that are not a list of results "
                "({pass: true|false, score: <number>, reason: <text>})"
            )
        extras[RETURNED_COMPONENTS] = kept
    return extras


def _component(value: Any) -> dict[str, Any] | None:
    """One result of the user's ``componentResults``, as promptfoo's GradingResult (``pass``, ``score``,
    ``reason``; its ``assertion`` and ``metadata`` when they are mappings); None when it is not one. The
    report lists them after their assertion, as promptfoo does."""
    if not isinstance(value, Mapping) or not isinstance(value.get("pass"), bool):
        return None
    score = value.get("score", float(value["pass"]))
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return None
    kept: dict[str, Any] = {"pass": value["pass"], "score": score, "reason": str(value.get("reason") or "")}
    for key in ("assertion", "metadata"):
        if isinstance(value.get(key), Mapping):
            kept[key] = dict(value[key])
    return kept


def _interpret_mapping(result: Mapping[str, Any], language: str) -> AssertionResult | Measurement:
    verdict = _plain(result["pass"] if "pass" in result else result.get("pass_"))
    raw_score = result.get("score")
    score = None if raw_score is None else _number(raw_score)
    lowered = language.lower()
    if raw_score is not None and score is None:
        return AssertionResult.failure(f"{lowered} assertion returned a non-numeric score {raw_score!r}")
    if verdict is not None and not isinstance(verdict, bool):
        return AssertionResult.failure(f"{lowered} assertion returned a non-boolean pass {verdict!r}")
    if verdict is None and score is None:
        return AssertionResult.failure(f"{lowered} assertion returned a dict without 'pass' or 'score'")
    extras = _grading_extras(result, language)
    if isinstance(extras, str):
        return AssertionResult.failure(extras)
    reason = result.get("reason")
    user_reason = str(reason) if reason not in (None, "") else ""
    if score is None:  # a verdict alone: no threshold to compare
        text = user_reason or f"{language} assertion returned pass={verdict}"
        return returned_verdict(bool(verdict), text, **extras)
    if verdict is None:
        return _returned(score, user_reason=user_reason, language=language, **extras)
    measured = _returned(score, f"pass={verdict}", user_reason, language, **extras)
    # with a threshold, the score must also reach it
    return dataclasses.replace(
        measured, verdict=verdict, plain=user_reason or f"{language} assertion returned pass={verdict}"
    )


def _parse_text_result(text: str) -> Any:
    """ "true"/"false" as a bool, numeric text as a float, anything else unchanged."""
    stripped = text.strip().lower()
    if stripped in ("true", "false"):
        return stripped == "true"
    try:
        return float(stripped)
    except ValueError:
        return text


def interpret_result(result: Any, language: str = "Python") -> AssertionResult | Measurement:
    """The user's return value: bool, number, dict, or "true"/"false"/numeric text; a score is a
    measurement that scoring.py compares with the threshold. ``language`` words the reasons."""
    result = _plain(result)
    if isinstance(result, str):
        result = _parse_text_result(result)
    if isinstance(result, bool):
        return returned_verdict(result, f"{language} assertion returned {result}")
    score = _number(result)
    if score is not None:
        return _returned(score, language=language)
    if isinstance(result, Mapping):
        return _interpret_mapping(result, language)
    hint = " (did the code forget to return?)" if result is None else ""
    from evalh.runtimes.python_worker import Foreign

    type_name = result.type_name if isinstance(result, Foreign) else type(result).__name__
    return AssertionResult.failure(
        f"{language.lower()} assertion must return a bool, a number or a dict {{pass, score, reason}}; "
        f"got {type_name}{hint}"
    )


async def _call_in_process(ctx: AssertionContext, timeout_s: float) -> AssertionResult | Measurement:
    """A callable passed to evalh.evaluate: ``fn(output, context)``, in this process."""
    try:
        result = await call_function(ctx.value, (ctx.output, await script_context(ctx)), timeout_s=timeout_s)
    except CallFailed as error:
        return AssertionResult.failure(f"python assertion {error}")
    return interpret_result(result)


# -------------------------------------------------------------------------------------- the type


def _check_python(value: Any, config: Mapping[str, Any]) -> str | None:
    if lookup(value) is not None:  # a callable passed to evalh.evaluate
        return timeout_problem(config)
    if not value.strip():
        return "python needs code or file://path.py[:function] as its value"
    if value.startswith("file://"):
        path, _ = split_file_target(value)
        if not path.endswith(".py"):
            return f"python assertion files must end in .py (got {path})"
        return timeout_problem(config)
    from evalh.runtimes.python_worker import compile_inline

    compiled = compile_inline(value)
    return compiled if isinstance(compiled, str) else timeout_problem(config)


_CODE_VALUE: dict[str, Any] = {**NONEMPTY_TEXT, "description": "Python code, or file://path.py[:function]."}


def _load_problem(problem: LoadProblem) -> str:
    return problem.text if problem.kind == "import" else f"python assertion file {problem.text}"


@assertion(
    "python",
    family="scripted",
    description="Python code (inline or file://x.py[:fn]) returns a bool, a score or {pass, score, reason}",
    requires_value=True,
    threshold_meaning="min score (optional; without one a score must be above 0)",
    direction="higher",
    value_schema=_CODE_VALUE,
    config_schema=TIMEOUT_CONFIG,
    open_config=True,  # the code receives its whole config (context['config'])
    check=_check_python,
    code_language="python",
)
async def python_assertion(ctx: AssertionContext) -> AssertionResult | Measurement:
    # validate checked config.timeout / timeoutMs; else evaluateOptions.timeoutMs, else 30 s
    timeout = call_timeout_s(ctx.config, ctx.timeout_s, PYTHON_ASSERTION_TIMEOUT_S)
    if lookup(ctx.value) is not None:
        return await _call_in_process(ctx, timeout)
    from evalh.runtimes.python import LoadProblem, Raised, TimedOut, WorkerLost, call_python

    try:
        outcome = await call_python(
            _target(ctx.value, ctx.config_dir), (ctx.output, await script_context(ctx)), timeout_s=timeout
        )
    except TimedOut as error:
        return AssertionResult.failure(
            f"python assertion {error} and was stopped (raise config.timeoutMs to allow longer)"
        )
    except WorkerLost:
        return AssertionResult.failure(
            "python assertion's process exited during the call (os._exit or a crash)"
        )
    if isinstance(outcome, LoadProblem):
        return AssertionResult.failure(_load_problem(outcome))
    if isinstance(outcome, Raised):
        return AssertionResult.failure(f"python assertion raised {outcome.describe()}")
    return interpret_result(outcome.value)
