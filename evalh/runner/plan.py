"""Suite -> jobs: the run matrix repeat × test × provider × prompt, each with its rendered prompt.

Pure and synchronous, so every template error surfaces before the first provider call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalh.errors import ConfigError
from evalh.model import (
    RECORDED_PROMPT,
    RECORDED_PROVIDER,
    Prompt,
    ProviderSpec,
    Suite,
    TestCase,
    asks_provider,
    narrows_matrix,
    prompt_warning_key,
    run_placeholders,
    runs_prompt,
)
from evalh.templating import EnvVars, render_prompt, template_env

__all__ = ["MAX_ROWS", "Job", "check_run_size", "count_rows", "plan_jobs", "render_job_prompt", "run_matrix"]

# A run of more rows is refused before anything is planned: it is a typo (--repeat 100000) more often
# than a plan, and its jobs and results would not fit in memory.
MAX_ROWS = 1_000_000


@dataclass(frozen=True)
class Job:
    """One row to produce: get an output (or take the recorded one), then grade it."""

    index: int
    test: TestCase
    prompt: Prompt
    provider: ProviderSpec
    prompt_index: int
    provider_index: int
    repeat_index: int
    rendered_prompt: str | list[dict[str, Any]]

    @property
    def uses_provider(self) -> bool:
        return asks_provider(self.test, self.provider)


def _render(
    prompt: Prompt, test: TestCase, variables: Mapping[str, Any], where: str, env: EnvVars, key: str
) -> str | list[dict[str, Any]]:
    if prompt.raw == "" or prompt.unusable:  # a prompt function's is called when the row runs; an
        return ""  # unusable template's rows are ERRORs (runner/execute.py)
    raw = _with_affixes(prompt.raw, test.options)
    return render_prompt(raw, variables, where=where, env=env, warn_key=key)


def _with_affixes(raw: Any, options: Mapping[str, Any]) -> Any:
    """promptfoo's ``options.prefix`` and ``options.suffix`` (a test's, else defaultTest's) put around the
    prompt's template before it renders; a chat prompt becomes its JSON text with them, as promptfoo's
    raw prompt is that text."""
    prefix, suffix = options.get("prefix"), options.get("suffix")
    if not prefix and not suffix:
        return raw
    text = raw if isinstance(raw, str) else json.dumps([dict(m) for m in raw], separators=(",", ":"))
    return f"{prefix or ''}{text}{suffix or ''}"


def render_job_prompt(job: Job, test: TestCase, env: EnvVars) -> str | list[dict[str, Any]]:
    """``job``'s prompt rendered with ``test``'s vars while the run goes (runner/sequence.py)."""
    key = prompt_warning_key(job.prompt, job.prompt_index)  # the plan's key: a warning is given once
    return _render(job.prompt, test, test.vars, f"{key} (for {test.path or 'a test'})", env, key)


def run_matrix(suite: Suite) -> tuple[tuple[Prompt, ...], tuple[ProviderSpec, ...]]:
    """The prompts and providers of the run; a suite without them has the recorded-output column."""
    return suite.prompts or (RECORDED_PROMPT,), suite.providers or (RECORDED_PROVIDER,)


def count_rows(suite: Suite, repeat: int = 1) -> int:
    """How many rows the run makes: tests × prompts × providers × repeat (the length of the plan), a
    test or provider that names its prompts counting those only."""
    prompts, providers = run_matrix(suite)
    if not any(map(narrows_matrix, suite.tests)) and all(p.prompts is None for p in providers):
        return len(suite.tests) * len(prompts) * len(providers) * max(1, repeat)
    rows = sum(
        runs_prompt(test, provider, prompt)
        for test in suite.tests
        for provider in providers
        for prompt in prompts
    )
    return rows * max(1, repeat)


def check_run_size(suite: Suite, repeat: int = 1) -> None:
    """Raise ConfigError (exit 2) when the run would make more than :data:`MAX_ROWS` rows."""
    rows = count_rows(suite, repeat)
    if rows > MAX_ROWS:
        prompts, providers = run_matrix(suite)
        raise ConfigError(
            f"the run would make {rows:,} rows ({len(suite.tests):,} tests x {len(prompts)} "
            f"prompts x {len(providers)} providers x {max(1, repeat):,} repeats), more than "
            f"the limit of {MAX_ROWS:,}",
            where="--repeat / evaluateOptions.repeat" if repeat > 1 else suite.config_path,
            hint="Lower the repeat count, or split the tests over several configs",
        )


def plan_jobs(suite: Suite, repeat: int = 1) -> list[Job]:
    """Every job of the run, in report order. Raises TemplateError for a prompt that cannot render, and
    ConfigError for a run of more than :data:`MAX_ROWS` rows."""
    check_run_size(suite, repeat)
    prompts, providers = run_matrix(suite)
    jobs: list[Job] = []
    env = template_env(suite.env)
    run_vars = run_placeholders(suite.tests, suite.prompts)  # set by earlier rows, when they run
    for repeat_index in range(max(1, repeat)):
        for test in suite.tests:
            rendered: dict[int, str | list[dict[str, Any]]] = {}
            for provider_index, provider in enumerate(providers):
                for prompt_index, prompt in enumerate(prompts):
                    if not runs_prompt(test, provider, prompt):  # prompts: filters; indices stay global
                        continue
                    if prompt_index not in rendered:
                        key = prompt_warning_key(prompt, prompt_index)  # one warning per prompt
                        where = f"{key} (for {test.path or 'a test'})"
                        variables = {**run_vars, **test.vars} if run_vars else test.vars
                        rendered[prompt_index] = _render(prompt, test, variables, where, env, key)
                    jobs.append(
                        Job(
                            index=len(jobs),
                            test=test,
                            prompt=prompt,
                            provider=provider,
                            prompt_index=prompt_index,
                            provider_index=provider_index,
                            repeat_index=repeat_index,
                            rendered_prompt=rendered[prompt_index],
                        )
                    )
    return jobs
