"""The prompt x provider columns of a run (promptfoo's ``CompletedPrompt``), shared by every format."""

from __future__ import annotations

from evalh.model import Prompt, ProviderSpec, RunResult, TestResult

__all__ = ["Column", "columns_of"]


class Column:
    """One prompt x provider column of a run (promptfoo's ``CompletedPrompt``) and the rows in it."""

    def __init__(
        self, prompt: Prompt, provider: ProviderSpec, prompt_index: int, provider_index: int
    ) -> None:
        self.prompt = prompt
        self.provider = provider
        self.prompt_index = prompt_index
        self.provider_index = provider_index
        self.rows: list[TestResult] = []

    @property
    def key(self) -> tuple[int, int]:
        return (self.provider_index, self.prompt_index)

    @property
    def name(self) -> str:
        """``[provider] prompt-label``, the header promptfoo's table and CSV use."""
        return f"[{self.provider.display}] {self.prompt.label}"


def columns_of(run: RunResult) -> list[Column]:
    """Every prompt x provider column, ordered by provider then prompt, each holding its rows in order.

    The rows decide which columns exist (a provider may be limited to some prompts); a run without any
    row lists the suite's providers x prompts.
    """
    columns: dict[tuple[int, int], Column] = {}
    for row in run.results:
        key = (row.provider_index, row.prompt_index)
        column = columns.get(key)
        if column is None:
            column = columns[key] = Column(row.prompt, row.provider, row.prompt_index, row.provider_index)
        column.rows.append(row)
    if not run.results:
        for pi, provider in enumerate(run.suite.providers):
            for qi, prompt in enumerate(run.suite.prompts):
                columns[(pi, qi)] = Column(prompt, provider, qi, pi)
    return [columns[k] for k in sorted(columns)]
