"""A Python provider's ``finishReason`` reaches the row's metadata as given (promptfoo keeps a custom
provider's finish reason unnormalised), so ``finish-reason`` can grade an agent written in Python."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalh.model import ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.registry import build_provider

AGENT = """
def call_api(prompt, options, context):
    reason = context["vars"]["reason"]
    reply = {"output": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    if reason != "none":
        reply["finishReason"] = 7 if reason == "number" else reason
    return reply
"""


@pytest.mark.parametrize(
    ("reason", "metadata"),
    [
        ("tool_use", {"finishReason": "tool_use"}),
        ("STOP", {"finishReason": "STOP"}),
        ("none", {}),
        ("number", {}),
    ],
)
def test_a_python_providers_finish_reason_is_kept(
    tmp_path: Path, reason: str, metadata: dict[str, Any]
) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    provider: Any = build_provider(ProviderSpec(id="python:agent.py", base_dir=str(tmp_path)))
    response = asyncio.run(provider.complete("go", CallContext(vars={"reason": reason})))
    assert response.error is None
    assert response.output == [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]
    assert dict(response.metadata) == metadata
