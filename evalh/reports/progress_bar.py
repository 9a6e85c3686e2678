"""The progress bar of a run on a terminal (rich.progress, imported only when a bar is drawn)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from evalh.common import activity
from evalh.reports.textutil import escape_controls

__all__ = ["activity_bar"]


class _ActivityProgress(Progress):
    """The bar, with one line per provider beneath: calls in flight, the oldest's wait, retries."""

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        for item in activity.snapshot():
            yield Text("  " + escape_controls(activity.describe(item), one_line=True), style="dim")


def activity_bar(console: Console) -> Progress:
    """``Evaluating ━━━━ 12/40 0:00:03``, with each provider's activity beneath, gone when it ends."""
    return _ActivityProgress(
        TextColumn("Evaluating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
