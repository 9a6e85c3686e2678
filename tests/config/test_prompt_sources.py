"""promptfoo's prompt sources (issue 10, the prompt items), through the CLI in process with the files of
``tests/fixtures/prompt_sources``: per-test ``prompts:``, every prompt file type, ``exec:`` prompts,
paths without ``file://``, globs, prompts fetched from services, and ``prompts[].config``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.config.test_promptfoo_semantics import evalh, run_rows, write
from tests.loopback import LoopbackServer, Reply

FIXTURES = Path(__file__).parents[1] / "fixtures" / "prompt_sources"


def project(tmp_path: Path, config: str) -> Path:
    """The fixture files copied beside ``config`` (so reports are written in the temporary directory)."""
    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    return write(tmp_path / "c.yaml", config)


def outputs(rows: list[dict[str, Any]]) -> list[Any]:
    return [row["response"]["output"] for row in rows]


# -- per-test prompts: ------------------------------------------------------------------------------


def test_a_test_runs_only_against_the_prompts_it_names_keeping_global_indices(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - {raw: 'A {{topic}}', label: alpha}
          - {raw: 'B {{topic}}', label: beta, id: the-b}
          - {id: file://prompts/two.txt, label: pair}
        providers: [echo]
        defaultTest:
          prompts: [alpha]
        tests:
          - vars: {topic: default}
          - vars: {topic: by-id}
            prompts: [the-b]
          - vars: {topic: group}
            prompts: [pair]
          - vars: {topic: wildcard}
            prompts: ['al*', 'pair: prompts/two.txt: Second*']
          - vars: {topic: none}
            prompts: []
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    shown = [(row["testIdx"], row["promptIdx"], row["response"]["output"]) for row in rows]
    assert shown == [
        (0, 0, "A default"),
        (1, 1, "B by-id"),
        (2, 2, "First group"),
        (2, 3, "Second group"),
        (3, 0, "A wildcard"),
        (3, 3, "Second wildcard"),
    ]


def test_a_prompts_entry_naming_no_prompt_is_a_located_error(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - {raw: 'A {{topic}}', label: alpha}
        providers: [echo]
        defaultTest:
          prompts: [alpah]
        tests:
          - vars: {topic: x}
            prompts: [alpha, gamma]
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2, result.stderr
    assert "c.yaml:6:" in result.stderr and "defaultTest.prompts[0]" in result.stderr
    assert "the prompt 'alpah', which the config does not have" in result.stderr
    assert "c.yaml:9:" in result.stderr and "tests[0].prompts[1]" in result.stderr
    assert "'alpha'" in result.stderr  # the hint lists the labels


# -- prompt files -----------------------------------------------------------------------------------


def test_each_prompt_file_type_is_read_as_promptfoo_reads_it(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - file://prompts/count.json
          - file://prompts/request.yaml
          - file://prompts/list.csv
          - file://prompts/lines.csv
          - file://prompts/lines.jsonl
          - file://prompts/about.md
          - file://prompts/cond.j2
        providers: [echo]
        tests:
          - vars: {topic: 'owls', n: 3, quote: 'the "end"'}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    got = outputs(rows)
    # a .json file that is not JSON is a text template ({{ n }} outside quotes)
    assert got[0] == '[{"role": "user", "content": "Count to 3", "n": 3}]\n'
    # YAML of any shape: each string rendered, sent as indented JSON (the quotes stay escaped)
    assert json.loads(got[1]) == {
        "contents": [{"parts": [{"text": 'Say the "end"'}]}],
        "generationConfig": {"temperature": 0},
    }
    assert got[1].startswith('{\n  "contents"')
    assert got[2:6] == ["Hello, owls", "Bye owls", "One owls", "Two owls"]
    assert json.loads(got[6]) == {"a": "owls"} and json.loads(got[7]) == {"b": "owls"}
    assert got[8] == "# Title\n\nAbout owls\n"  # .md as written, not trimmed
    assert got[9] == "Jinja owls\n"
    labels = [row["prompt"]["label"] for row in rows]
    assert labels[2:6] == [
        "greeting",
        "Prompt 2 - Bye {{topic}}",
        "Prompt 1 - One {{topic}}",
        "Prompt 2 - Two {{topic}}",
    ]
    assert labels[0] == "prompts/count.json" and labels[8] == "prompts/about.md"


def test_a_json_chat_prompt_reaches_a_chat_provider_as_messages() -> None:
    from evalh.providers.chat import to_messages

    text = json.dumps(
        [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}], indent=2
    )
    assert to_messages(text) == [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}]
    assert to_messages("[1, 2]") == [{"role": "user", "content": "[1, 2]"}]
    assert to_messages("[not json") == [{"role": "user", "content": "[not json"}]


def test_an_inline_json_prompt_escapes_the_vars_placed_in_it(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts: ['{"question": "{{ q }}"}']
        providers: [echo]
        tests:
          - vars: {q: 'a "quoted"
              word'}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert json.loads(outputs(rows)[0]) == {"question": 'a "quoted" word'}


# -- exec: prompts ----------------------------------------------------------------------------------


def test_an_exec_prompt_prints_the_prompt_from_its_context(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - id: exec:./make_prompt.sh
            config: {temperature: 0.5}
          - file://make_prompt.sh
        providers: [echo]
        tests:
          - vars: {topic: owls, kept: NO}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    # the output is data: the {{ kept }} it prints is not rendered again
    assert outputs(rows) == ["exec {{ kept }} owls t=0.5 via echo", "exec {{ kept }} owls t=None via echo"]
    assert rows[1]["prompt"]["label"] == "make_prompt.sh"


def test_a_failing_or_slow_exec_prompt_is_an_error_row(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - exec:./fail.sh
          - id: exec:./slow.sh
            config: {timeoutMs: 300}
          - 'fine {{topic}}'
        providers: [echo]
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert [row["failureReason"] for row in rows] == [2, 2, 0]
    assert "Prompt exec:./fail.sh failed: exited with code 3: no prompt for you" in rows[0]["error"]
    assert "timed out after 0.3 s" in rows[1]["error"]
    assert result.exit_code != 0


def test_an_exec_prompt_naming_no_program_is_a_located_error(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - exec:./absent.sh
          - exec:no-such-program-evalh
          - id: exec:./make_prompt.sh
            config: {timeout: -1}
        providers: [echo]
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert "c.yaml:3" in result.stderr and "program ./absent.sh was not found" in result.stderr
    assert "c.yaml:4" in result.stderr and "'no-such-program-evalh' was not found on PATH" in result.stderr
    assert "c.yaml:5" in result.stderr and "config.timeout must be a positive number" in result.stderr


# -- paths without file://, globs -------------------------------------------------------------------


def test_a_path_without_file_prefix_is_loaded_and_a_sentence_stays_text(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - prompts/short.txt
          - 'What is 1/2 of {{topic}}?'
          - 'Compare A/B: {{topic}}'
        providers: [echo]
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert outputs(rows) == ["Short: owls", "What is 1/2 of owls?", "Compare A/B: owls"]
    assert "warning" not in result.stderr.lower()


def test_a_path_looking_prompt_naming_no_file_is_a_located_error(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - prompts/shrot.txt
          - see notes/today
        providers: [echo]
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert "c.yaml:3" in result.stderr and "'prompts/shrot.txt' looks like a file path" in result.stderr
    assert "c.yaml:4" in result.stderr and "'see notes/today' looks like a file path" in result.stderr
    assert "{raw: '...'}" in result.stderr


def test_globs_load_every_matching_prompt_file_and_prompt_function(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - file://prompts/s*.txt
          - id: funcs/*.py:make
            label: fn
          - prompts/*.nothing
        providers: [echo]
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert outputs(rows) == ["Short: owls", "a.py owls", "b.py owls", "prompts/*.nothing"]
    assert [row["prompt"]["label"] for row in rows[1:3]] == ["fn: funcs/a.py", "fn: funcs/b.py"]
    assert "no file matches the prompt 'prompts/*.nothing'" in result.stderr  # a warning, located
    assert "c.yaml:6" in result.stderr


# -- prompts fetched from services ------------------------------------------------------------------


def test_a_prompt_from_a_service_is_an_error_row_and_a_located_warning(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - portkey://pp-greeting
          - langfuse://greeting:3:chat
          - 'plain {{topic}}'
        providers: [echo]
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert [row["failureReason"] for row in rows] == [2, 2, 0]
    assert "evalh does not support portkey:// prompts" in rows[0]["error"]
    assert "fetches them from Langfuse" in rows[1]["error"]
    assert outputs(rows)[2] == "plain owls"
    assert "c.yaml:3" in result.stderr and "portkey://" in result.stderr
    strict = evalh("validate", str(config), "--strict")
    assert strict.exit_code == 2 and "c.yaml:4" in strict.stderr and "langfuse://" in strict.stderr


# -- prompts[].config -------------------------------------------------------------------------------


def chat_server(loopback: LoopbackServer) -> LoopbackServer:
    reply = {
        "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }
    loopback.route("POST", "/v1/chat/completions", lambda request: Reply.json(reply))
    return loopback


def test_a_prompts_config_is_merged_over_an_api_providers_config_for_its_calls(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    server = chat_server(loopback)
    config = project(
        tmp_path,
        f"""
        prompts:
          - raw: 'warm {{{{topic}}}}'
            config: {{temperature: 0.9, max_tokens: 5}}
          - 'plain {{{{topic}}}}'
          - id: file://configured.py:with_config
            config: {{max_tokens: 7}}
        providers:
          - id: openai:chat:test-model
            config: {{apiBaseUrl: '{server.url}/v1', apiKey: sk-test, temperature: 0.1, max_tokens: 50}}
          - id: python:config_echo.py
            config: {{temperature: 0.1}}
        tests:
          - vars: {{topic: owls}}
        """,
    )
    result, rows = run_rows(config, "--no-cache", "-j", "1")
    assert result.exit_code == 0, result.stderr
    sent = {
        request.json["messages"][-1]["content"]: (request.json["temperature"], request.json["max_tokens"])
        for request in server.requests
    }
    assert sent == {"warm owls": (0.9, 5), "plain owls": (0.1, 50), "configured owls": (0.3, 7)}
    # a python: provider keeps its own config, as promptfoo's does (the prompt's is not merged)
    echoed = [
        json.loads(row["response"]["output"]) for row in rows if row["provider"]["id"].startswith("python")
    ]
    assert [item["config"] for item in echoed] == [{"temperature": 0.1}] * 3


def test_a_provider_runs_only_the_prompts_it_names(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts:
          - {raw: 'A {{topic}}', label: alpha}
          - {id: file://prompts/two.txt, label: pair}
        providers:
          - {id: echo, label: first, prompts: [alpha]}
          - echo:
              label: second
              prompts: ['pair']
          - {id: echo, label: third, prompts: [gamma]}
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    shown = [(row["provider"]["label"], row["promptIdx"], row["response"]["output"]) for row in rows]
    assert shown == [("first", 0, "A owls"), ("second", 1, "First owls"), ("second", 2, "Second owls")]
    assert "c.yaml:10" in result.stderr and "'gamma', which the config does not have" in result.stderr
    strict = evalh("validate", str(config), "--strict")
    assert strict.exit_code == 2 and "so third runs no prompt for it" in strict.stderr


def test_a_prompt_function_returning_an_object_sends_indented_json(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts: [file://configured.py:request]
        providers: [echo]
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert outputs(rows) == [json.dumps({"contents": [{"text": "owls"}]}, indent=2)]


def test_file_references_inside_a_json_prompt_are_loaded(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        """
        prompts: [file://prompts/with_file.json]
        providers: [echo]
        tests:
          - vars: {topic: owls, style: terse}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert json.loads(outputs(rows)[0]) == [
        {"role": "system", "content": "You answer in terse style.\n"},
        {"role": "user", "content": "Tell me about owls"},
    ]
    broken = write(tmp_path / "broken.yaml", "prompts: [file://prompts/bad_ref.json]\nproviders: [echo]\n")
    result = evalh("validate", str(broken))
    assert result.exit_code == 2 and "broken.yaml:1" in result.stderr and "nowhere.txt" in result.stderr


def test_a_yaml_prompt_file_holding_a_list_is_one_prompt_with_its_files_loaded(tmp_path: Path) -> None:
    # promptfoo 0.123's yaml processor: the whole list is one prompt (its JSON), and a file:// string
    # inside is replaced by the file's text, read from the config's folder and not trimmed
    (tmp_path / "configs").mkdir()
    write(tmp_path / "system.txt", "You are terse about {{topic}}.\n")
    write(tmp_path / "configs" / "prompts.yaml", "- file://system.txt\n- Tell me about {{topic}}\n")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: file://configs/prompts.yaml
        providers: [echo]
        tests:
          - vars: {topic: owls}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert len(rows) == 1
    assert json.loads(rows[0]["response"]["output"]) == ["You are terse about owls.\n", "Tell me about owls"]
