"""``commandLineOptions:``: promptfoo's defaults for command-line flags, written in the config.

promptfoo 0.123 reads ``maxConcurrency``, ``repeat``, ``delay`` and ``cache`` from the config it is given
(``src/commands/eval.ts``: ``cmdObj.repeat ?? commandLineOptions?.repeat ?? evaluateOptions.repeat``),
and ``grader`` when the config is the one in the current directory (the flag's default); evalh applies
those five, with the same precedence: a flag given wins, then ``commandLineOptions``, then
``evaluateOptions`` (:meth:`RunOptions.over`, the one precedence rule). The other keys change nothing
here (promptfoo ignores most of them too in a config given with ``-c``, ``filterPattern`` and ``output``
among them): each gets a located warning naming the flag to pass instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.common.notices import warn
from evalh.config.files import LoadContext
from evalh.config.locate import Document
from evalh.config.providers import check_choice, parse_choice
from evalh.errors import ConfigError
from evalh.model import ProviderChoice, RunOptions

__all__ = ["COMMAND_LINE_KEY", "command_line_grader", "command_line_run_options", "warn_ignored_options"]

COMMAND_LINE_KEY = "commandLineOptions"
# The keys evalh applies, each under the evaluateOptions key RunOptions reads it from (the same name).
_RUN_KEYS = ("maxConcurrency", "repeat", "delay", "cache")
_GRADER = "grader"
# evalh's flag for a key it does not apply, where it has one.
_FLAGS = {
    "output": "-o / outputPath:",
    "filterPattern": "--filter-pattern",
    "filterFirstN": "--filter-first-n",
    "filterSample": "--filter-sample",
    "filterMetadata": "--filter-metadata",
    "filterPrompts": "--filter-prompts",
    "filterProviders": "--filter-providers",
    "filterTargets": "--filter-targets",
    "filterFailing": "--filter-failing",
    "filterErrorsOnly": "--filter-errors-only",
    "var": "--var",
    "description": "--description / description:",
    "table": "--no-table",
    "progressBar": "--no-progress-bar",
    "write": "--no-write",
    "retryErrors": "--retry-errors",
    "envPath": "--env-file",
    "verbose": "--verbose",
    "filterRange": "--filter-range",
    "tableCellMaxLength": "--table-cell-max-length",
    "prompts": "--prompts",
    "providers": "--providers",
    "tests": "--tests",
    "vars": "--vars",
    "assertions": "--assertions",
    "modelOutputs": "--model-outputs",
}


def command_line_run_options(
    command_line: Mapping[str, Any] | None, evaluate_options: Mapping[str, Any]
) -> RunOptions:
    """The run options the config sets: ``commandLineOptions``' over ``evaluateOptions``'."""
    configured = RunOptions.from_evaluate_options(evaluate_options)
    if not command_line:
        return configured
    chosen = {key: command_line[key] for key in _RUN_KEYS if key in command_line}
    return RunOptions.from_evaluate_options(chosen).over(configured) if chosen else configured


def command_line_grader(
    command_line: Mapping[str, Any] | None, document: Document, ctx: LoadContext
) -> ProviderChoice | None:
    """``commandLineOptions.grader`` (the grader when no --grader is given), parsed and checked, with
    relative paths from the config's folder."""
    grader = (command_line or {}).get(_GRADER)
    if grader is None:
        return None
    where = document.place((COMMAND_LINE_KEY, _GRADER))
    try:
        choice = parse_choice(grader, f"{COMMAND_LINE_KEY}.{_GRADER}", str(ctx.base_dir), where)
        check_choice(choice, where, ctx)
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return None
    return choice


def warn_ignored_options(
    command_line: Mapping[str, Any] | None, document: Document, ctx: LoadContext
) -> None:
    """A located warning (an error under --strict) for each key evalh does not apply."""
    for key in command_line or {}:
        if key in _RUN_KEYS or key == _GRADER:
            continue
        flag = _FLAGS.get(str(key))
        where = document.where((COMMAND_LINE_KEY, key))
        ignored = ConfigError(
            "has no effect in evalh",
            where=where,
            hint=(f"Pass {flag} on the command line instead" if flag else "Remove it")
            + "; evalh applies maxConcurrency, repeat, delay, cache and grader from commandLineOptions",
        )
        try:
            warn(ignored, where=where, subject=f"{COMMAND_LINE_KEY}.{key}")
        except ConfigError as error:  # --strict: reported with the config's other problems
            ctx.problems.add_exception(error)
