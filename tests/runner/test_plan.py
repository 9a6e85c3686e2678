"""The plan: one job count for the progress bar, the size check and the runner; one recorded column."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalh.config.load import load_suite
from evalh.model import (
    RECORDED_PROMPT,
    RECORDED_PROVIDER,
    AssertionSpec,
    Prompt,
    ProviderSpec,
    RunOptions,
    Suite,
    TestCase,
)
from evalh.runner.plan import count_rows, plan_jobs
from evalh.session import run as session
from evalh.session.run import run_config

RECORDED_TESTS = "tests:\n  - output: a\n    assert: [{type: equals, value: a}]\n  - output: b\n"


def _suite(prompts: int, providers: int) -> Suite:
    return Suite(
        tests=tuple(TestCase(index=i, output="x", has_output=True) for i in range(3)),
        prompts=tuple(Prompt(raw=f"p{i}", label=f"p{i}") for i in range(prompts)),
        providers=tuple(ProviderSpec(id="echo", label=f"e{i}") for i in range(providers)),
    )


@pytest.mark.parametrize(("prompts", "providers", "repeat"), [(0, 0, 1), (2, 0, 1), (0, 3, 2), (2, 2, 3)])
def test_the_row_count_is_the_plans_length(prompts: int, providers: int, repeat: int) -> None:
    suite = _suite(prompts, providers)
    assert count_rows(suite, repeat) == len(plan_jobs(suite, repeat))


def test_the_progress_bar_counts_the_rows_the_run_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    totals: list[int] = []

    @contextlib.contextmanager
    def counting(total: int, **_: object) -> Iterator[Callable[[int], None]]:
        totals.append(total)
        yield lambda n: None

    monkeypatch.setattr(session, "progress", counting)
    config = tmp_path / "evalh.yaml"
    config.write_text(
        "prompts: ['{{q}}', 'again {{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n  - vars: {q: b}\n",
        encoding="utf-8",
    )
    result = run_config(
        config, RunOptions(repeat=3, cache=False), show_table=False, show_progress=True, verbose=False
    ).result
    assert totals == [len(result.results)] == [12]


def test_recorded_rows_have_one_pseudo_provider_and_prompt(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(RECORDED_TESTS, encoding="utf-8")
    jobs = plan_jobs(load_suite(config))
    assert [(job.provider, job.prompt) for job in jobs] == [(RECORDED_PROVIDER, RECORDED_PROMPT)] * 2
    assert not any(job.uses_provider for job in jobs)


def test_a_suite_built_in_code_gets_the_same_recorded_column() -> None:
    suite = Suite(
        tests=(TestCase(index=0, output="a", has_output=True, asserts=(AssertionSpec("equals", value="a"),)),)
    )
    (job,) = plan_jobs(suite)
    assert (job.provider, job.prompt) == (RECORDED_PROVIDER, RECORDED_PROMPT)
    assert job.provider.display == job.prompt.label == "recorded"


def test_options_prefix_and_suffix_go_around_the_prompt_before_it_renders(tmp_path: Path) -> None:
    # promptfoo's options.prefix / options.suffix: a test's, else defaultTest's; templates inside render;
    # a chat prompt becomes its compact JSON text with them (promptfoo's raw prompt is that text)
    config = tmp_path / "c.yaml"
    config.write_text(
        "prompts: ['About {{t}}', {raw: [{role: user, content: 'Chat {{t}}'}], label: chat}]\n"
        "providers: [echo]\n"
        "defaultTest: {options: {suffix: ' (end {{t}})'}}\n"
        "tests:\n"
        "  - {vars: {t: owls}, options: {prefix: '[{{t}}] '}}\n"
        "  - {vars: {t: bats}}\n",
        encoding="utf-8",
    )
    rendered = [job.rendered_prompt for job in plan_jobs(load_suite(config))]
    assert rendered == [
        "[owls] About owls (end owls)",
        '[owls] [{"role":"user","content":"Chat owls"}] (end owls)',
        "About bats (end bats)",
        '[{"role":"user","content":"Chat bats"}] (end bats)',
    ]


def test_a_prompt_without_prefix_or_suffix_is_rendered_as_before(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "prompts: [{raw: [{role: user, content: 'Chat {{t}}'}], label: chat}]\n"
        "providers: [echo]\ntests: [{vars: {t: owls}}]\n",
        encoding="utf-8",
    )
    assert plan_jobs(load_suite(config))[0].rendered_prompt == [{"role": "user", "content": "Chat owls"}]
