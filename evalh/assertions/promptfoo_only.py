"""The assertion types promptfoo 0.123 has and evalh does not run, each with what to use instead.

One home: validate (schema and config checks), a CSV ``__expected`` cell and the runner word an unknown
type through :func:`unknown_type`, so a promptfoo user reads "promptfoo's type, not supported here, use X"
instead of a did-you-mean to an unrelated type. docs/promptfoo.md lists the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["PROMPTFOO_ONLY", "unknown_type"]

_RUBRIC = "llm-rubric with a rubric that says what to judge"
PROMPTFOO_ONLY: Mapping[str, str] = MappingProxyType(
    {
        "agent-rubric": f"{_RUBRIC} (the grader sees the output, not the agent's tool calls; "
        "trajectory:* checks them)",
        "classifier": "a python assertion (file://check.py) that runs your classifier",
        "human": "a person's rating after the run (in `evalh view`, or `evalh runs rate REF ROW_ID --pass`)",
        "meteor": "bleu, gleu, rouge-n or rouge-l (lexical overlap scores evalh runs locally)",
        "moderation": f"{_RUBRIC} naming the categories to flag, or a python assertion calling "
        "your moderation API",
        "perplexity": "a python assertion over the provider's logprobs (evalh providers do not report them)",
        "perplexity-score": "a python assertion over the provider's logprobs (evalh providers do not "
        "report them)",
        "pi": f"{_RUBRIC} (Pi Labs' scorer is a hosted service evalh does not call)",
        "ruby": "a python or javascript assertion (evalh runs no Ruby)",
        "search-rubric": f"{_RUBRIC} (evalh's grader has no web search tool)",
        "skill-used": "trajectory:tool-used or a javascript assertion over the output",
        "webhook": "a python assertion that posts to your endpoint",
    }
)


def unknown_type(full_type: str, suggestion: str | None) -> tuple[str, str]:
    """The message and hint for assertion type ``full_type`` (``not-`` included) that evalh lacks;
    ``suggestion`` is the caller's did-you-mean among the types evalh knows (used for any other type)."""
    advice = PROMPTFOO_ONLY.get(full_type.removeprefix("not-"))
    if advice is not None:
        message = f"assertion type {full_type!r} is promptfoo's, and evalh does not support it"
        return message, f"Use {advice} instead (docs/promptfoo.md lists what evalh does not support)"
    hint = (
        f"Did you mean {suggestion!r}?"
        if suggestion
        else "Run `evalh list assertions` for the types evalh knows"
    )
    return f"unknown assertion type {full_type!r}", hint
