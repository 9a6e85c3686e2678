"""storeOutputAs and _conversation (promptfoo): rows that read earlier rows run one at a time, in order;
stored outputs are data. Through the CLI in process, on tests/fixtures/sequence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.config.test_promptfoo_semantics import evalh, run_rows, write

FIXTURE = Path(__file__).parent.parent / "fixtures" / "sequence"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "p")
    return tmp_path / "p"


def test_stored_outputs_feed_later_tests_in_order(project: Path) -> None:
    # -j 8 would let the rows overlap; storeOutputAs makes them run one after another
    result, rows = run_rows(project / "store.yaml", "-j", "8")
    outputs = [row["response"]["output"] for row in rows]
    assert outputs[:3] == ["apple", "Why do you like apple?", "Rebut 'Why do you like apple?' about apple"]
    assert rows[2]["vars"]["fruit"] == "apple"  # every later row gets the stored vars
    assert result.exit_code == 0, result.stderr
    assert "undefined" not in result.stderr  # {{fruit}} is set when the test runs


def test_a_stored_output_is_never_rendered(project: Path) -> None:
    _, rows = run_rows(project / "store.yaml")
    assert rows[3]["response"]["output"] == "{{ 7*7 }}"
    assert rows[4]["response"]["output"] == "got {{ 7*7 }}"  # not "got 49"


def test_conversation_holds_the_earlier_turns_of_its_prompt(project: Path) -> None:
    result, rows = run_rows(project / "conv.yaml", "-j", "8")
    outputs = [row["response"]["output"] for row in rows]
    assert outputs == [
        "one",
        "[one->one]two",
        "three",  # another conversationId: a conversation of its own
        "four",  # disableConversationVar: no earlier turns
        "[one->one][[one->one]two->[one->one]two][four->four]five",
    ]
    turn = rows[1]["vars"]["_conversation"][0]
    assert turn["input"] == "one" and turn["output"] == "one" and turn["prompt"] == "one"
    assert result.exit_code == 0, result.stderr
    assert "undefined" not in result.stderr


def test_a_failed_row_stores_nothing_and_a_stored_var_wins(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{message}}"]
        providers: [echo]
        tests:
          - vars: {message: first}
            options: {storeOutputAs: saved}
          - vars: {message: "", saved: own}
            options: {storeOutputAs: saved}
          - vars: {message: "[{{saved}}]", saved: own}
        """,
    )
    result, rows = run_rows(config)
    # the empty output is not stored (promptfoo stores truthy outputs), and the stored value replaces
    # the test's own var of that name
    assert rows[2]["response"]["output"] == "[first]"
    assert rows[2]["vars"]["saved"] == "first"
    assert result.exit_code == 0, result.stderr


def test_without_store_or_conversation_rows_still_overlap(tmp_path: Path) -> None:
    from evalh.config.load import load_suite
    from evalh.runner.sequence import runs_in_sequence

    plain = write(tmp_path / "a.yaml", 'prompts: ["{{q}}"]\nproviders: [echo]\ntests: [{vars: {q: x}}]\n')
    assert not runs_in_sequence(load_suite(plain))
    assert runs_in_sequence(load_suite(FIXTURE / "store.yaml"))
    assert runs_in_sequence(load_suite(FIXTURE / "conv.yaml"))
    bad = write(
        tmp_path / "b.yaml",
        'prompts: ["{{q}}"]\nproviders: [echo]\ntests: [{vars: {q: x}, options: {storeOutputAs: 3}}]\n',
    )
    result = evalh("validate", str(bad))
    assert result.exit_code == 2
    assert "tests[0].options.storeOutputAs: must be a string" in result.stderr


def test_a_later_turn_is_graded_with_its_own_turn_last(tmp_path: Path) -> None:
    # promptfoo's _conversation is the conversation's live list: the row's own turn joins it before
    # grading, except on the first turn, whose fresh empty list stays empty
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{% for t in _conversation %}{{ t.output }}|{% endfor %}{{ q }}"]
        providers: [echo]
        tests:
          - vars: {q: one}
            assert: [{type: javascript, value: "context.vars._conversation.length === 0"}]
          - vars: {q: two}
            assert:
              - type: javascript
                value: "context.vars._conversation.length === 2"
              - type: javascript
                value: "context.vars._conversation[1].output === 'one|two'"
        """,
    )
    result, rows = run_rows(config)
    assert [row["success"] for row in rows] == [True, True], rows
    assert len(rows[1]["vars"]["_conversation"]) == 2  # the report shows what the assertions saw
    assert result.exit_code == 0


def test_a_disabled_conversation_var_is_undefined_without_a_warning(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{% for t in _conversation %}{{ t.output }}|{% endfor %}{{ q }}"]
        providers: [echo]
        tests:
          - vars: {q: one}
          - vars: {q: two}
            options: {disableConversationVar: true}
            assert:
              - {type: equals, value: two}
              - {type: javascript, value: "context.vars._conversation === undefined"}
        """,
    )
    result, rows = run_rows(config)
    assert rows[1]["success"] is True, rows[1]["gradingResult"]
    assert "undefined variable" not in result.stderr


def test_promptfoos_multi_turn_example_reads_the_last_turn_with_length(tmp_path: Path) -> None:
    # promptfoo's examples/multiple-turn-conversation: Nunjucks reads JavaScript's .length of a text
    # (the turn's input), and a character's .content is undefined, so the turn renders empty, not an ERROR
    write(
        tmp_path / "prompt.json",
        """
        [
          {% for completion in _conversation %}
            {"role": "user", "content": "{{ completion.input[completion.input.length - 1].content }}"},
            {"role": "assistant",
             "content": "{{ completion.output | length }} {{ completion.input.length }}"},
          {% endfor %}
          {"role": "user", "content": "{{ question }}"}
        ]
        """,
    )
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: [file://prompt.json]
        providers: [echo]
        tests:
          - vars: {question: Who founded it?}
          - vars: {question: Where?}
        """,
    )
    result, rows = run_rows(config)
    assert [row["failureReason"] for row in rows] == [0, 0], rows[1].get("error")
    messages = json.loads(rows[1]["response"]["output"])
    first = json.loads(rows[0]["response"]["output"])
    assert messages[0] == {"role": "user", "content": ""}
    assert messages[1]["content"] == f"{len(rows[0]['response']['output'])} {len('Who founded it?')}"
    assert first == [{"role": "user", "content": "Who founded it?"}]
    assert result.exit_code == 0
