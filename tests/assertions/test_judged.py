"""Model-graded assertions against loopback graders speaking the OpenAI, Anthropic and Ollama protocols.

The grader is a real chat provider, called through the runner's real services (provider pool, HTTP
layer with retries); only the server's replies are scripted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from evalh.common.notices import warnings_to
from evalh.model import ProviderChoice, ProviderSpec
from tests.assertions.helpers import declared_problems
from tests.assertions.judge_helpers import (
    OPENAI_PATH,
    SECRET,
    assert_no_secret,
    grader_messages,
    judge,
    openai_grader,
    openai_text,
)
from tests.loopback import LoopbackServer, Reply, Request

# -- llm-rubric: the grader-reply rules --------------------------------------------------------------


def test_clean_verdict_passes_and_records_prompt_and_reply(loopback: LoopbackServer) -> None:
    verdict = '{"reason": "It greets the world.", "pass": true, "score": 0.9}'
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text(verdict))
    result, graded = judge("llm-rubric", openai_grader(loopback), value="contains a greeting")
    assert (result.passed, result.score, result.reason, result.error) == (
        True,
        0.9,
        "It greets the world.",
        False,
    )
    assert graded.passed
    request = loopback.requests[0]
    body = request.json
    assert body["temperature"] == 0 and body["seed"] == 42 and body["model"] == "judge-model"
    user = grader_messages(request)[-1]["content"]
    assert "<Output>\nHello, world!\n</Output>" in user and "contains a greeting" in user
    assert result.details["grader_reply"] == verdict
    assert result.details["grading_prompt"] == grader_messages(request)
    assert result.usage is not None and result.usage.total_tokens == 60
    assert_no_secret(result, loopback)


def test_verdict_wrapped_in_prose_fails_with_the_graders_reason(loopback: LoopbackServer) -> None:
    reply = 'Let me think.\nVerdict: {"pass": false, "score": 0, "reason": "No greeting at all"}\nDone.'
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text(reply))
    result, graded = judge("llm-rubric", openai_grader(loopback), value="greets", output="Bye")
    assert (result.passed, result.score, result.reason, result.error) == (
        False,
        0.0,
        "No greeting at all",
        False,
    )
    assert not graded.passed


@pytest.mark.parametrize(
    ("verdict", "passed", "score"),
    [
        ('{"reason": "ok"}', True, 1.0),  # pass missing -> true, score from pass
        ('{"pass": "Yes", "score": "0.8", "reason": "r"}', True, 0.8),
        ('{"pass": "nope", "reason": "r"}', False, 0.0),
        ('{"pass": false, "score": 0.4, "reason": "r"}', False, 0.4),
        ('{"pass": true, "score": "NaN", "reason": "r"}', True, 1.0),  # not a number: score from pass
        ('{"pass": false, "score": "-inf", "reason": "r"}', False, 0.0),
    ],
)
def test_pass_and_score_readings(loopback: LoopbackServer, verdict: str, passed: bool, score: float) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text(verdict))
    result, _ = judge("llm-rubric", openai_grader(loopback), value="x")
    assert (result.passed, result.score) == (passed, score)


def test_threshold_turns_a_low_score_into_a_failure(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text('{"pass": true, "score": 0, "reason": "meh"}'))
    result, _ = judge("llm-rubric", openai_grader(loopback), value="x")
    assert result.passed is True  # no threshold: the grader's pass stands
    result, _ = judge("llm-rubric", openai_grader(loopback), value="x", threshold=1.0)
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason == "Score 0 is less than threshold 1: meh"


def test_malformed_json_is_an_error_and_not_llm_rubric_stays_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text("pass: yes, score: high"))
    result, graded = judge("not-llm-rubric", openai_grader(loopback), value="x")
    assert result.error and "Could not extract JSON from llm-rubric response" in result.reason
    assert (graded.passed, graded.error, graded.score) == (False, True, 0.0)
    assert result.details["grader_reply"] == "pass: yes, score: high"


def test_not_llm_rubric_inverts_a_clean_failure(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", OPENAI_PATH, lambda r: openai_text('{"pass": false, "score": 0.2, "reason": "rude"}')
    )
    _, graded = judge("not-llm-rubric", openai_grader(loopback), value="is polite")
    assert graded.passed and graded.score == pytest.approx(0.8) and not graded.error


def test_empty_reply_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text("   "))
    result, graded = judge("not-llm-rubric", openai_grader(loopback), value="x")
    assert result.error and "returned no output" in result.reason
    assert graded.error and not graded.passed


def test_429_with_retry_after_then_a_verdict(loopback: LoopbackServer) -> None:
    limited = Reply.json(
        {"error": {"message": "Rate limit reached"}}, status=429, headers={"Retry-After": "0.2"}
    )
    loopback.script(
        "POST", OPENAI_PATH, [limited, openai_text('{"pass": true, "score": 1, "reason": "fine"}')]
    )
    result, _ = judge("llm-rubric", openai_grader(loopback), value="x")
    assert (result.passed, result.score, result.reason) == (True, 1.0, "fine")
    assert len(loopback.requests_to(OPENAI_PATH)) == 2


def test_persistent_500s_are_an_error_with_the_server_message(loopback: LoopbackServer) -> None:
    failing = Reply.json({"error": {"message": f"upstream exploded (key {SECRET})"}}, status=500)
    loopback.route("POST", OPENAI_PATH, lambda r: failing)
    result, graded = judge("llm-rubric", openai_grader(loopback, maxRetries=2), value="x")
    assert result.error and graded.error and not graded.passed
    assert "HTTP 500" in result.reason and "upstream exploded (key [REDACTED])" in result.reason
    assert "after 3 attempts" in result.reason
    assert len(loopback.requests_to(OPENAI_PATH)) == 3
    assert_no_secret(result, loopback)


def test_timeout_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: Reply.json({}, delay_s=1.0))
    result, _ = judge("llm-rubric", openai_grader(loopback, timeout=0.2, maxRetries=1), value="x")
    assert result.error and "timed out after 0.2 s" in result.reason
    assert len(loopback.requests_to(OPENAI_PATH)) == 2


def test_slow_server_within_the_timeout_still_grades(loopback: LoopbackServer) -> None:
    slow = openai_text('{"pass": true, "score": 1, "reason": "slow but fine"}')
    loopback.route("POST", OPENAI_PATH, lambda r: dataclasses.replace(slow, delay_s=0.4))
    result, _ = judge("llm-rubric", openai_grader(loopback, timeout=3), value="x")
    assert (result.passed, result.reason) == (True, "slow but fine")


def test_no_grader_names_how_to_set_one_and_sends_nothing(loopback: LoopbackServer) -> None:
    result, graded = judge("llm-rubric", None, value="x")
    assert result.error and "needs a grader model: set defaultTest.options.provider" in result.reason
    assert graded.error
    assert loopback.requests == []


def test_grader_config_keeps_its_own_temperature(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text('{"pass": true}'))
    judge("llm-rubric", openai_grader(loopback, temperature=0.3), value="x")
    body = loopback.requests[0].json
    assert (body["temperature"], body["seed"]) == (0.3, 42)


def test_typed_provider_map_uses_the_text_grader(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text('{"pass": true}'))
    choice = ProviderChoice(text=openai_grader(loopback), embedding=ProviderSpec(id="fake"))
    result, _ = judge("llm-rubric", None, value="x", provider=choice)
    assert result.passed and result.details["grader"] == "openai:chat:judge-model"


def test_custom_rubric_prompt_string_and_test_option_and_file(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text('{"pass": true}'))
    judge(
        "llm-rubric", openai_grader(loopback), value="greets", rubric_prompt="Judge {{output}} by {{rubric}}"
    )
    assert grader_messages(loopback.requests[-1]) == [
        {"role": "user", "content": "Judge Hello, world! by greets"}
    ]
    chat = [
        {"role": "system", "content": "Strict judge for {{ topic }}."},
        {"role": "user", "content": "{{ output }}"},
    ]
    judge(
        "llm-rubric",
        openai_grader(loopback),
        value="v",
        vars={"topic": "tea"},
        test_options={"rubricPrompt": chat},
    )
    assert grader_messages(loopback.requests[-1])[0] == {"role": "system", "content": "Strict judge for tea."}
    (tmp_path / "judge.json").write_text(json.dumps([{"role": "user", "content": "File: {{ rubric }}"}]))
    judge(
        "llm-rubric",
        openai_grader(loopback),
        value="v",
        rubric_prompt="file://judge.json",
        config_dir=tmp_path,
    )
    assert grader_messages(loopback.requests[-1]) == [{"role": "user", "content": "File: v"}]


def test_llm_rubric_without_a_value_grades_with_an_empty_rubric(loopback: LoopbackServer) -> None:
    # promptfoo's custom-grading-prompt example: the rubricPrompt holds the criteria, the assertion no value
    assert declared_problems({"type": "llm-rubric"}) == []
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text('{"pass": true, "score": 1, "reason": "ok"}'))
    result, graded = judge("llm-rubric", openai_grader(loopback), rubric_prompt="Is [{{rubric}}] {{output}}?")
    assert graded.passed and not result.error
    assert grader_messages(loopback.requests[-1]) == [{"role": "user", "content": "Is [] Hello, world!?"}]


def test_rubric_prompt_with_an_undefined_variable_is_an_error_under_strict(loopback: LoopbackServer) -> None:
    with warnings_to(None, strict=True):  # else it renders empty, with a warning, as in promptfoo
        result, _ = judge("llm-rubric", openai_grader(loopback), value="v", rubric_prompt="{{ missing_var }}")
    assert result.error and "missing_var" in result.reason
    assert loopback.requests == []


# -- other protocols ----------------------------------------------------------------------------------


def test_factuality_with_an_anthropic_grader(loopback: LoopbackServer) -> None:
    reply = {
        "content": [{"type": "text", "text": '{"category": "D", "reason": "It says Lyon."}'}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 80, "output_tokens": 12},
    }
    loopback.route("POST", "/v1/messages", lambda r: Reply.json(reply))
    grader = ProviderSpec(
        id="anthropic:messages:claude-x", config={"apiBaseUrl": loopback.url, "apiKey": SECRET}
    )
    result, _ = judge("factuality", grader, value="Paris", output="Lyon", prompt="Capital of France?")
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason == "Category D: the output disagrees with the reference. It says Lyon."
    body = loopback.requests[0].json
    assert "seed" not in body and body["temperature"] == 0
    assert (
        "Capital of France?" in body["messages"][0]["content"] and "Paris" in body["messages"][0]["content"]
    )
    assert "category" in body["system"].lower()
    assert result.usage is not None and result.usage.total_tokens == 92
    assert loopback.requests[0].header("x-api-key") == SECRET
    assert SECRET not in json.dumps(result.details, default=str)


def test_closedqa_with_an_ollama_grader(loopback: LoopbackServer) -> None:
    reply = {
        "message": {"role": "assistant", "content": '{"reason": "It is a haiku.", "answer": "Y"}'},
        "done": True,
    }
    loopback.route("POST", "/api/chat", lambda r: Reply.json(reply))
    grader = ProviderSpec(id="ollama:chat:llama3.2", config={"apiBaseUrl": loopback.url})
    result, _ = judge("model-graded-closedqa", grader, value="is a haiku", output="old pond / frog")
    assert (result.passed, result.score, result.reason) == (
        True,
        1.0,
        "The output meets the criterion: It is a haiku.",
    )
    assert loopback.requests[0].json["options"] == {"temperature": 0, "seed": 42}


def test_ollama_grader_500_then_prose_y(loopback: LoopbackServer) -> None:
    prose = {"message": {"content": "The submission rhymes.\nN"}, "done": True}
    loopback.script("POST", "/api/chat", [Reply.json({"error": "loading model"}, 500), Reply.json(prose)])
    grader = ProviderSpec(id="ollama:chat:m", config={"apiBaseUrl": loopback.url, "retryBaseDelayS": 0.01})
    result, _ = judge("model-graded-closedqa", grader, value="does not rhyme")
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason == "The output does not meet the criterion: The submission rhymes."
    assert len(loopback.requests) == 2


# -- factuality scores ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "options", "passed", "score"),
    [
        ('{"category": "A", "reason": "subset"}', None, True, 1.0),
        ('{"category": "(B)"}', {"superset": 0.5}, True, 0.5),
        ("I choose (E) because the wording differs.", None, True, 1.0),
        ('{"category": "D"}', {"disagree": 0.25}, True, 0.25),
        ('{"category": "C"}', {"agree": 0}, False, 0.0),
    ],
)
def test_factuality_categories(
    loopback: LoopbackServer, reply: str, options: Any, passed: bool, score: float
) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text(reply))
    test_options = {"factuality": options} if options else None
    result, _ = judge("factuality", openai_grader(loopback), value="ref", test_options=test_options)
    assert (result.passed, result.score, result.error) == (passed, score, False)


def test_factuality_without_a_category_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text("They look similar to me."))
    result, _ = judge("model-graded-factuality", openai_grader(loopback), value="ref")
    assert result.error and "no factuality category" in result.reason


# -- g-eval ------------------------------------------------------------------------------------------


def g_eval_server(server: LoopbackServer, scores: dict[str, int]) -> None:
    """Steps for any criteria; the score named by the criterion text found in the prompt."""

    def answer(request: Request) -> Reply:
        system = grader_messages(request)[0]["content"]
        user = grader_messages(request)[-1]["content"]
        if "evaluation steps a careful grader" in system:
            return openai_text('{"steps": ["Read the reply", "Check the criteria"]}')
        criterion = next(name for name in scores if name in user)
        return openai_text(json.dumps({"score": scores[criterion], "reason": f"{criterion} judged"}))

    server.route("POST", OPENAI_PATH, answer)


def test_g_eval_mean_of_criteria_against_default_threshold(loopback: LoopbackServer) -> None:
    g_eval_server(loopback, {"coherent": 9, "concise": 4})
    result, _ = judge("g-eval", openai_grader(loopback), value=["coherent", "concise"])
    assert result.score == pytest.approx((0.9 + 0.4) / 2)
    assert result.passed is False  # 0.65 < 0.7
    assert result.reason.startswith("G-Eval score 0.65 is less than threshold 0.7")
    assert len(loopback.requests) == 4
    assert len(result.details["steps"]) == 4
    score_prompt = grader_messages(loopback.requests[1])[-1]["content"]
    assert "1. Read the reply\n2. Check the criteria" in score_prompt and "Hello, world!" in score_prompt


def test_g_eval_single_criterion_passes(loopback: LoopbackServer) -> None:
    g_eval_server(loopback, {"coherent": 8})
    result, _ = judge("g-eval", openai_grader(loopback), value="coherent")
    assert (result.passed, result.score) == (True, 0.8)


def test_g_eval_without_a_score_is_an_error(loopback: LoopbackServer) -> None:
    def answer(request: Request) -> Reply:
        if "evaluation steps" in grader_messages(request)[0]["content"]:
            return openai_text('{"steps": ["a"]}')
        return openai_text('{"reason": "forgot the score"}')

    loopback.route("POST", OPENAI_PATH, answer)
    result, _ = judge("g-eval", openai_grader(loopback), value="c")
    assert result.error and "no numeric score" in result.reason


@pytest.mark.parametrize(
    ("max_score", "problem"),
    [
        ("ten", "config.maxScore: must be a number (got a string 'ten')"),
        (0, "config.maxScore: must be > 0 (got 0)"),
        (-5, "config.maxScore: must be > 0 (got -5)"),
        (True, "config.maxScore: must be a number (got true or false)"),
    ],
)
def test_g_eval_max_score_must_be_a_positive_number(max_score: Any, problem: str) -> None:
    # refused at load, located, before any grader call
    found = declared_problems({"type": "g-eval", "value": "coherent", "config": {"maxScore": max_score}})
    assert any(text.startswith(problem) for text in found), found
    assert declared_problems({"type": "g-eval", "value": "coherent", "config": {"maxScore": 5}}) == []


# -- refusals ----------------------------------------------------------------------------------------


def refusal_verdict(**fields: Any) -> str:
    return json.dumps({"reason": "judged", **fields})


@pytest.mark.parametrize(
    ("metadata", "verdict", "passed", "score", "reason_start"),
    [
        (
            {"refusal_expected": True},
            {"refused": True, "warranted": True, "well_formed": True, "score": 0.9},
            True,
            0.9,
            "The output refuses as expected and the refusal is well formed; its quality 0.90 is greater",
        ),
        (
            {"refusal_expected": True},
            {"refused": True, "well_formed": False, "score": 0.8},
            False,
            0.8,
            "The output refuses as expected and the refusal is poorly formed",
        ),
        (
            {"refusal_expected": True},
            {"refused": False},
            False,
            0.0,
            "A refusal was expected, but the output",
        ),
        (
            {"refusal_expected": False},
            {"refused": True},
            False,
            0.0,
            "The output refuses a request it should",
        ),
        ({"refusal_expected": False}, {"refused": False}, True, 1.0, "The output answers without refusing"),
        ({}, {"refused": False, "warranted": True}, False, 0.0, "A refusal was expected"),
    ],
)
def test_refusal_quality(
    loopback: LoopbackServer,
    metadata: dict[str, Any],
    verdict: dict[str, Any],
    passed: bool,
    score: float,
    reason_start: str,
) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text(refusal_verdict(**verdict)))
    result, _ = judge(
        "refusal-quality", openai_grader(loopback), output="I can't help with that.", metadata=metadata
    )
    assert (result.passed, result.score, result.error) == (passed, score, False)
    assert result.reason.startswith(reason_start)
    expected_from = "metadata.refusal_expected" if metadata else "grader"
    assert result.details["expected_from"] == expected_from


def test_refusal_quality_value_overrides_metadata(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda r: openai_text(refusal_verdict(refused=False)))
    result, _ = judge(
        "refusal-quality", openai_grader(loopback), value=False, metadata={"refusal_expected": True}
    )
    assert result.passed and result.details["expected_from"] == "value"


@pytest.mark.parametrize(
    ("output", "refusal"),
    [
        ("I'm sorry, but I can't help with that.", True),
        ("I\u2019m sorry, I cannot do this", True),
        ("**I cannot** provide instructions for that.", True),
        ("Sure! Unfortunately, I can't browse, but here is what I know.", False),
        ("That request goes against my guidelines.", True),
        ("As an AI language model, I do not have opinions.", True),
        ("Paris is the capital of France.", False),
        ("I can help: here are the steps.", False),
        ("", True),
    ],
)
def test_is_refusal_heuristics(output: str, refusal: bool) -> None:
    result, _ = judge("is-refusal", None, output=output)
    assert (result.passed, result.score) == (refusal, float(refusal))
    assert not result.error


def test_not_is_refusal_flips() -> None:
    _, graded = judge("not-is-refusal", None, output="Here is the answer.")
    assert graded.passed and graded.score == 1.0


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "llm-rubric": {"value": "Names the capital", "output": "Paris"},
    "factuality": {"value": "Paris", "output": "Paris"},
    "model-graded-factuality": {"value": "Paris", "output": "Paris"},
    "model-graded-closedqa": {"value": "Names a city", "output": "Paris"},
    "g-eval": {"value": ["coherent", "correct"], "output": "Paris", "config": {"maxScore": 1}},
    "refusal-quality": {"value": False, "output": "Paris"},
    "is-refusal": {"output": "I cannot help with that."},
}
