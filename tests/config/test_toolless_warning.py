"""A tool-call assertion on a provider whose config has no `tools` (`functions`) fails every row ("No tools
configured in provider"): evalh says so at load, naming the assertion and the provider, with a
did-you-mean for a misspelt key; an error under --strict. Configs that offer tools load silently."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.errors import ConfigError

TOOLS = "[{type: function, function: {name: get_weather, parameters: {type: object}}}]"


def config(tmp_path: Path, providers: str, assertion: str = "{type: is-valid-openai-tools-call}") -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent(f"""\
            prompts: [hi]
            providers: {providers}
            tests:
              - assert:
                  - {assertion}
            """)
    )
    return path


def test_a_misspelt_tools_key_is_said_at_load(tmp_path: Path) -> None:
    shown: list[str] = []
    path = config(tmp_path, f"[{{id: echo, config: {{tool: {TOOLS}}}}}]")
    with warnings_to(shown.append):
        load_suite(path)
    (message,) = shown
    assert "c.yaml:5:9 tests[0].assert[0]: is-valid-openai-tools-call" in message
    assert "providers[0] (echo) has no `tools` (it has `tool`: did you mean `tools`?)" in message
    with pytest.raises(ConfigError, match="has no `tools`"), warnings_to(None, strict=True):
        load_suite(path)


def test_functions_are_checked_for_the_function_call_type(tmp_path: Path) -> None:
    shown: list[str] = []
    with warnings_to(shown.append):
        load_suite(
            config(
                tmp_path,
                f"[{{id: echo, config: {{tools: {TOOLS}}}}}]",
                "{type: is-valid-openai-function-call}",
            )
        )
    assert len(shown) == 1 and "has no `functions`" in shown[0]


@pytest.mark.parametrize(
    ("providers", "assertion"),
    [
        (f"[{{id: echo, config: {{tools: {TOOLS}}}}}]", "{type: is-valid-openai-tools-call}"),
        ("[echo]", "{type: not-is-valid-openai-tools-call}"),  # negated: a failing check is what it asks for
        ("[echo]", "{type: tool-call-f1, value: [get_weather]}"),  # reads the output only
    ],
)
def test_nothing_is_said_when_the_check_can_pass(tmp_path: Path, providers: str, assertion: str) -> None:
    with warnings_to(None, strict=True):
        load_suite(config(tmp_path, providers, assertion))
