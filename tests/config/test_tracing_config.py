"""The tracing: block: promptfoo's keys, evalh's waitMs, PROMPTFOO_TRACING_ENABLED, located errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalh.common.environment import overlaid
from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import TracingSettings


def config(tmp_path: Path, tracing: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(tracing) + "prompts: [hi]\nproviders: [echo]\n")
    return path


def test_absent_block_is_off(tmp_path: Path) -> None:
    assert load_suite(config(tmp_path, "")).tracing == TracingSettings()


def test_promptfoos_minimal_block(tmp_path: Path) -> None:
    block = "tracing: {enabled: true, failOnReceiverStartFailure: true, otlp: {http: {enabled: true}}}\n"
    with warnings_to(None, strict=True):  # no key of it is unknown
        loaded = load_suite(config(tmp_path, block)).tracing
    assert loaded == TracingSettings(enabled=True, port=4318, receive=True, wait_ms=3000)


@pytest.mark.parametrize("value", ["true", "1"])
def test_the_env_variable_turns_it_on(tmp_path: Path, value: str) -> None:
    with overlaid({"PROMPTFOO_TRACING_ENABLED": value}):
        assert load_suite(config(tmp_path, "")).tracing.enabled
    path = config(tmp_path, f"env: {{PROMPTFOO_TRACING_ENABLED: '{value}'}}\n")
    assert load_suite(path).tracing.enabled


@pytest.mark.parametrize(
    ("block", "where", "message"),
    [
        ("tracing: {enabled: true, otlp: {http: {prot: 4318}}}\n", "c.yaml:1:", "unknown key 'prot'"),
        ("tracing: {enabled: true, otlp: {http: {host: 0.0.0.0}}}\n", "tracing.otlp.http.host", "127.0.0.1"),
        ("tracing: {enabled: true, otlp: {http: {port: 70000}}}\n", "tracing.otlp.http.port", "65535"),
        ("tracing: {enabled: yes please}\n", "tracing.enabled", "true or false"),
        ("tracing: {waitMs: -1}\n", "tracing.waitMs", "0"),
    ],
)
def test_bad_values_are_located_config_errors(tmp_path: Path, block: str, where: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_suite(config(tmp_path, block))
    assert where in str(raised.value) and message in str(raised.value)
    assert raised.value.exit_code == 2


def test_forwarding_is_accepted_with_a_warning(tmp_path: Path) -> None:
    shown: list[str] = []
    block = "tracing:\n  enabled: true\n  forwarding: {enabled: true, endpoint: 'http://jaeger:4318'}\n"
    with warnings_to(shown.append):
        loaded = load_suite(config(tmp_path, block)).tracing
    assert loaded.forward_to == "http://jaeger:4318"
    assert len(shown) == 1 and "c.yaml:3:3 tracing.forwarding: not followed" in shown[0]


UNTRACED = """
tests:
  - vars: {q: a}
    assert:
      - type: contains
        value: a
      - type: assert-set
        assert:
          - type: trajectory:tool-used
            value: search
"""


def test_a_trace_assertion_without_tracing_is_said_at_load(tmp_path: Path) -> None:
    shown: list[str] = []
    with warnings_to(shown.append):
        load_suite(config(tmp_path, UNTRACED))
    (message,) = shown
    assert "tests[0].assert[1].assert[0]" in message and "does not trace" in message
    assert "tracing: {enabled: true}" in message
    with pytest.raises(ConfigError, match="does not trace"), warnings_to(None, strict=True):
        load_suite(config(tmp_path, UNTRACED))
    shown.clear()
    with warnings_to(shown.append):
        load_suite(config(tmp_path, "tracing: {enabled: true}\n" + UNTRACED))
    assert shown == []


def test_a_refused_tracing_block_is_not_also_said_to_be_missing(tmp_path: Path) -> None:
    """A schema error in ``tracing:`` once came with a warning that the config "does not trace" (and,
    under --strict, a second problem saying so) although the block enables tracing."""
    broken = config(tmp_path, "tracing: {enabled: true, waitMs: -5}\n" + UNTRACED)
    shown: list[str] = []
    with pytest.raises(ConfigError) as caught, warnings_to(shown.append):
        load_suite(broken)
    assert "tracing.waitMs" in str(caught.value) and shown == []
    with pytest.raises(ConfigError) as caught, warnings_to(None, strict=True):
        load_suite(broken)
    assert "tracing.waitMs" in str(caught.value) and "does not trace" not in str(caught.value)


def test_redact_attributes_and_command_tool_names_are_read_as_promptfoo_reads_them(tmp_path: Path) -> None:
    block = """\
        tracing:
          enabled: true
          commandToolNames: [" Bash ", bash, "", RunShell]
          otlp: {http: {redactAttributes: [API_KEY, " session ", api_key]}}
        """
    with warnings_to(None, strict=True):  # both are known keys
        loaded = load_suite(config(tmp_path, block)).tracing
    assert loaded.command_tool_names == ("bash", "runshell")
    assert loaded.redact_attributes == ("api_key", "session")


def _nested_sets(depth: int, inner: str) -> str:
    """An assert-set ``depth`` levels deep around ``inner`` (one YAML flow mapping)."""
    text = inner
    for _ in range(depth):
        text = f"{{type: assert-set, assert: [{text}]}}"
    return text


def test_the_trace_warning_names_the_first_trace_assertion_in_document_order(tmp_path: Path) -> None:
    """The warning comes from the one walk of every assertion that checks them: the first trace
    assertion is still the first in the document, whether a repeat of it was found clean before or it
    sits in an assert-set nested too deep to be checked."""
    traced = "{type: 'trajectory:tool-used', value: search}"
    repeated = f"""
tests:
  - vars: {{q: a}}
    assert: [{{type: contains, value: a}}]
  - vars: {{q: b}}
    assert: [{{type: contains, value: a}}, {_nested_sets(1, traced)}]
  - vars: {{q: c}}
    assert: [{traced}]
"""
    shown: list[str] = []
    with warnings_to(shown.append):
        load_suite(config(tmp_path, repeated))
    (message,) = shown
    assert "tests[1].assert[1].assert[0]" in message and "does not trace" in message
    too_deep = f"""
tests:
  - vars: {{q: a}}
    assert: [{{type: contains, value: a}}, {_nested_sets(7, traced)}]
"""
    shown.clear()
    with pytest.raises(ConfigError, match="nested more than 5 deep"), warnings_to(shown.append):
        load_suite(config(tmp_path, too_deep))
    (message,) = shown
    assert ".assert[0]" * 6 in message and "does not trace" in message
