"""The ``javascript`` assertion: your own JavaScript decides, with promptfoo's contract.

The value is inline code or ``file://path.js[:function]`` (relative to the config file's folder). Inline
code is the body of ``function (output, context)``: one line gets ``return`` put before it (before its
last statement when it starts with ``const``/``let``/``var``); several lines are the body as written.
A file is CommonJS (``module.exports = function (output, context) {...}``, or ``:fn`` names an export);
``require('./helper')`` of a relative file works, an npm package or Node module is an error naming it
(``evalh/runtimes/javascript_source.py``).

The function gets the raw ``output`` and ``context = {prompt, vars, test, config, logProbs, provider,
providerResponse}`` and returns a boolean, a number (passes if > 0 without a threshold, else if >=
threshold; the score is the number) or a GradingResult ``{pass, score, reason, namedScores,
componentResults}``, read exactly as the ``python`` assertion reads its result (``scripted.py``). A
returned promise is awaited. The value is code, never a template (``evalh/config/code_values.py``): it
reads vars as data, ``context.vars.name``.

Like promptfoo, an exception thrown by the code is a FAIL with score 0 naming the error and its line
(under ``not-`` too); a syntax error is a config error at validate; a call that exceeds its time limit
(``config.timeout`` seconds or ``config.timeoutMs``, else ``evaluateOptions.timeoutMs``, else 10 s) or
its memory limit is an ERROR row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import NONEMPTY_TEXT, TIMEOUT_CONFIG, assertion
from evalh.assertions.scripted import interpret_result, script_context
from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S, call_timeout_s, timeout_problem
from evalh.model import AssertionResult, Measurement
from evalh.runtimes.javascript_source import JsFileProblem, JsSource, file_source, inline_source

__all__ = ["javascript_file_problem", "javascript_source"]

_RESULT_TYPES = ("boolean", "number", "object")


def javascript_source(value: str, config_dir: Path | None) -> JsSource:
    """The program for an assertion's value (raises JsFileProblem for an unusable file)."""
    if value.startswith("file://"):
        return file_source(value, config_dir)
    return inline_source(value)


def javascript_file_problem(value: str, config_dir: Path | None) -> str | None:
    """What is wrong with ``file://x.js[:fn]`` (missing, refused requires, a syntax error), or None."""
    from evalh.runtimes.javascript import syntax_problem  # the engine: loaded by a config that has code

    try:
        source = file_source(value, config_dir)
    except JsFileProblem as error:
        return str(error)
    return source.problems[0] if source.problems else syntax_problem(source)


def _check_javascript(value: Any, config: Mapping[str, Any]) -> str | None:
    if not value.strip():
        return "javascript needs code or file://path.js[:function] as its value"
    if value.startswith("file://"):  # the file itself is checked where the config's folder is known
        return timeout_problem(config)
    from evalh.runtimes.javascript import syntax_problem

    return syntax_problem(inline_source(value)) or timeout_problem(config)


def _interpret(value: Any, type_name: str) -> AssertionResult | Measurement:
    if type_name not in _RESULT_TYPES or value is None:
        hint = " (did the code forget to return?)" if type_name == "undefined" else ""
        return AssertionResult.failure(
            "javascript assertion must return a boolean, a number or a GradingResult "
            f"{{pass, score, reason}}; got {type_name}{hint}"
        )
    return interpret_result(value, language="JavaScript")


@assertion(
    "javascript",
    family="javascript",
    description="JavaScript (inline or file://x.js[:fn]) returns a boolean, a score or a GradingResult",
    requires_value=True,
    threshold_meaning="min score (optional; without one a score must be above 0)",
    direction="higher",
    value_schema={**NONEMPTY_TEXT, "description": "JavaScript code, or file://path.js[:function]."},
    config_schema=TIMEOUT_CONFIG,
    open_config=True,  # the code receives its whole config (context.config)
    check=_check_javascript,
    code_language="javascript",
)
async def javascript_assertion(ctx: AssertionContext) -> AssertionResult | Measurement:
    # validate checked config.timeout / timeoutMs; else evaluateOptions.timeoutMs, else 10 s
    timeout = call_timeout_s(ctx.config, ctx.timeout_s, JAVASCRIPT_TIMEOUT_S)
    from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript

    try:
        source = javascript_source(ctx.value, ctx.config_dir)
        outcome = await call_javascript(source, (ctx.output, await script_context(ctx)), timeout_s=timeout)
    except JsFileProblem as error:
        return AssertionResult.failure(f"javascript assertion: {error}")
    except TimedOut as error:
        return AssertionResult.failure(
            f"javascript assertion {error} and was stopped (raise config.timeoutMs to allow longer)"
        )
    except JsFailed as error:
        return AssertionResult.failure(f"javascript assertion could not run: {error}")
    if isinstance(outcome, JsThrown):
        # promptfoo's verdict: a failure with score 0, never inverted into a pass
        return Measurement.not_applicable(f"JavaScript assertion threw {outcome.message}")
    return _interpret(outcome.value, outcome.type_name)
