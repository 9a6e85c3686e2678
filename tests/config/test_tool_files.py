"""``tools: file://tools.yaml`` in a provider's (or a prompt's) config: read once at load, relative to the
config, located when it cannot be; and a whole run with tools against a loopback OpenAI server, the
tool-call assertions graded, from the provider and then from the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import RunOptions, Status
from evalh.runner.execute import run_suite
from tests.config.conftest import WriteFiles
from tests.loopback import LoopbackServer, Reply

TOOLS_YAML = """
- type: function
  function:
    name: get_weather
    description: Weather in {{ city }}
    parameters:
      type: object
      properties: {city: {type: string}}
      required: [city]
"""


def test_a_tools_file_is_read_at_load(project: WriteFiles) -> None:
    config = project(
        "providers:\n  - id: openai:chat:gpt-4o-mini\n    config: {tools: file://tools/weather.yaml}\n"
        "prompts: [hi]\ntests: [{vars: {city: Paris}}]\n",
        {"tools/weather.yaml": TOOLS_YAML},
    )
    suite = load_suite(config)
    tools = suite.providers[0].config["tools"]
    assert tools[0]["function"]["name"] == "get_weather"
    assert tools[0]["function"]["description"] == "Weather in {{ city }}"  # rendered per call, not at load


def test_a_list_of_tool_files_is_flattened_and_prompt_configs_load_too(project: WriteFiles) -> None:
    other = "- {type: function, function: {name: search, parameters: {type: object}}}\n"
    config = project(
        "providers:\n  - id: openai:chat:gpt-4o-mini\n"
        "    config: {tools: [file://a.yaml, file://b.json]}\n"
        "prompts:\n  - {raw: hi, config: {tools: file://b.json}}\ntests: [{}]\n",
        {
            "a.yaml": TOOLS_YAML,
            "b.json": json.dumps([{"type": "function", "function": {"name": "search"}}]),
            "c.yaml": other,
        },
    )
    suite = load_suite(config)
    names = [tool["function"]["name"] for tool in suite.providers[0].config["tools"]]
    assert names == ["get_weather", "search"]
    assert suite.prompts[0].config["tools"][0]["function"]["name"] == "search"


@pytest.mark.parametrize(
    ("tools", "files", "message"),
    [
        ("file://missing.yaml", {}, r"evalh\.yaml:\d+:\d+ providers\[0\].*file not found: .*missing\.yaml"),
        (
            "file://t{{ n }}.yaml",
            {},
            r"providers\[0\]\.config\.tools: the tools file path .* holds a template",
        ),
        ("file://tools.py", {"tools.py": "TOOLS = []\n"}, r"is a script; evalh does not run scripts"),
    ],
)
def test_a_tools_file_that_cannot_be_read_is_a_located_config_error(
    project: WriteFiles, tools: str, files: dict[str, str], message: str
) -> None:
    config = project(
        f"providers:\n  - id: openai:chat:gpt-4o-mini\n    config: {{tools: '{tools}'}}\n"
        "prompts: [hi]\ntests: [{}]\n",
        files,
    )
    with pytest.raises(ConfigError, match=message):
        load_suite(config)


def _reply(request: Any) -> Reply:
    city = request.json["tools"][0]["function"]["description"].removeprefix("Weather in ")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    return Reply.json(
        {
            "choices": [
                {
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


def test_a_run_with_tools_grades_the_calls_then_grades_them_again_from_the_cache(
    project: WriteFiles, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    loopback.route("POST", "/v1/chat/completions", _reply)
    config = project(
        f"""
providers:
  - id: openai:chat:gpt-4o-mini
    config: {{apiBaseUrl: "{loopback.url}/v1", apiKey: sk-test-0000000000, temperature: 0, tools: file://tools.yaml}}
prompts: ["Weather in {{{{ city }}}}?"]
tests:
  - vars: {{city: Paris}}
    assert:
      - type: is-valid-openai-tools-call
      - type: tool-call-f1
        value: [get_weather]
      - type: finish-reason
        value: tool_calls
  - vars: {{city: Lyon}}
    assert:
      - type: finish-reason
        value: stop
""",
        {"tools.yaml": TOOLS_YAML},
    )
    first = run_suite(load_suite(config), RunOptions())
    assert [row.status for row in first.results] == [Status.PASS, Status.FAIL]
    assert first.results[1].reason == 'finish-reason: Expected finish reason "stop" but got "tool_calls"'
    assert len(loopback.requests) == 2  # the tools rendered per test: two cache keys
    again = run_suite(load_suite(config), RunOptions())
    assert len(loopback.requests) == 2 and all(row.cached for row in again.results)
    assert [row.status for row in again.results] == [Status.PASS, Status.FAIL]


def test_a_parameters_schema_that_is_not_a_schema_is_a_located_config_error(project: WriteFiles) -> None:
    broken = "- {type: function, function: {name: f, parameters: {type: objekt}}}\n"
    config = project(
        "providers:\n  - id: openai:chat:gpt-4o-mini\n    config: {tools: file://tools.yaml}\n"
        "prompts: [hi]\ntests: [{}]\n",
        {"tools.yaml": broken},
    )
    with pytest.raises(
        ConfigError,
        match=r"providers\[0\]\.config\.tools\[0\]\.function\.parameters: "
        r"tool 'f', parameters: the value is not a valid JSON Schema",
    ):
        load_suite(config)
    # inline too, and a prompt's; a schema holding a template is checked per call, once rendered
    inline = project(
        "providers: [openai:chat:gpt-4o-mini]\n"
        "prompts:\n  - {raw: hi, config: {functions: [{name: f, parameters: {type: [1]}}]}}\ntests: [{}]\n"
    )
    with pytest.raises(ConfigError, match=r"prompts\[0\]\.config\.functions\[0\]\.parameters"):
        load_suite(inline)
    templated = project(
        "providers:\n  - id: openai:chat:gpt-4o-mini\n"
        "    config: {tools: [{type: function, function: {name: f, parameters: {type: '{{ t }}'}}}]}\n"
        "prompts: [hi]\ntests: [{vars: {t: object}}]\n"
    )
    assert load_suite(templated).providers[0].config["tools"][0]["function"]["parameters"] == {
        "type": "{{ t }}"
    }


def test_a_python_provider_offers_tools_and_gives_its_finish_reason(project: WriteFiles) -> None:
    agent = (
        "import json\n"
        "def call_api(prompt, options, context):\n"
        "    name = options['config']['tools'][0]['function']['name']\n"
        "    args = json.dumps({'city': 'Oslo'})\n"
        "    call = {'type': 'function', 'function': {'name': name, 'arguments': args}}\n"
        "    return {'output': [call], 'finishReason': 'TOOL_CALLS'}\n"
    )
    config = project(
        "providers:\n  - id: file://agent.py\n    config: {tools: file://tools.yaml}\nprompts: [hi]\n"
        "tests:\n  - assert:\n      - type: is-valid-openai-tools-call\n"
        "      - {type: finish-reason, value: tool_calls}\n"
        "      - {type: tool-call-f1, value: get_weather}\n",
        {"tools.yaml": TOOLS_YAML, "agent.py": agent},
    )
    row = run_suite(load_suite(config), RunOptions(cache=False)).results[0]
    assert row.status is Status.PASS, row.reason
