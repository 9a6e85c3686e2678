"""RAG judges (answer-relevance, context-*) against a loopback OpenAI-compatible grader."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalh.assertions.judged_rag import split_sentences
from evalh.model import ProviderChoice, ProviderSpec
from tests.assertions.judge_helpers import OPENAI_PATH, grader_messages, judge, openai_grader, openai_text
from tests.loopback import LoopbackServer, Reply, Request

CONTEXT = "Paris is the capital of France. It has 2.1 million people. The Seine flows through it."
VARS = {"query": "What is the capital of France?", "context": CONTEXT}


def by_system(server: LoopbackServer, replies: dict[str, Any]) -> None:
    """Answer each grader call with the reply whose key appears in its system message."""

    def answer(request: Request) -> Reply:
        system = grader_messages(request)[0]["content"]
        key = next(k for k in replies if k in system)
        return openai_text(json.dumps(replies[key]))

    server.route("POST", OPENAI_PATH, answer)


def test_context_faithfulness_counts_supported_statements(loopback: LoopbackServer) -> None:
    statements = ["Paris is the capital of France.", "Paris has 3 million people.", "Paris is in Europe."]
    verdicts = [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "yes"}]
    by_system(loopback, {"Break the answer": {"statements": statements}, "inferred": {"verdicts": verdicts}})
    result, _ = judge("context-faithfulness", openai_grader(loopback), vars=VARS, threshold=0.7, output="...")
    assert result.score == pytest.approx(2 / 3)
    assert result.passed is False
    assert (
        result.reason
        == "2 of 3 statements are supported by the context: score 0.67 is less than threshold 0.7"
    )
    assert result.details["unsupported"] == ["Paris has 3 million people."]
    verdict_prompt = grader_messages(loopback.requests[1])[-1]["content"]
    assert CONTEXT in verdict_prompt and "2. Paris has 3 million people." in verdict_prompt
    statements_prompt = grader_messages(loopback.requests[0])[-1]["content"]
    assert VARS["query"] in statements_prompt


def test_context_faithfulness_with_a_skipped_verdict(loopback: LoopbackServer) -> None:
    by_system(
        loopback,
        {"Break the answer": {"statements": ["a", "b"]}, "inferred": {"verdicts": [{"verdict": "yes"}]}},
    )
    result, _ = judge("context-faithfulness", openai_grader(loopback), vars=VARS)
    assert result.score == 0.5 and result.passed  # default threshold 0


def test_context_judges_need_context(loopback: LoopbackServer) -> None:
    result, graded = judge("context-faithfulness", openai_grader(loopback), vars={"query": "q"})
    assert result.error and "vars.context" in result.reason and graded.error
    assert loopback.requests == []


def test_context_recall(loopback: LoopbackServer) -> None:
    sentences = [
        {"sentence": "Paris is the capital.", "attributed": True},
        {"sentence": "It hosted the 1900 Olympics.", "attributed": False},
    ]
    by_system(loopback, {"reference answer": {"sentences": sentences}})
    result, _ = judge(
        "context-recall",
        openai_grader(loopback),
        value="Paris is the capital. It hosted 1900.",
        vars=VARS,
        threshold=0.5,
    )
    assert (result.score, result.passed) == (0.5, True)
    assert result.details["unsupported"] == ["It hosted the 1900 Olympics."]


def test_context_recall_without_a_context_reads_the_prompt(loopback: LoopbackServer) -> None:
    """promptfoo's rule: context-recall falls back to the rendered prompt (the other judges need one)."""
    by_system(loopback, {"reference answer": {"sentences": [{"sentence": "Paris.", "attributed": True}]}})
    prompt = [{"role": "user", "content": "Context: Paris is the capital of France."}]
    result, _ = judge("context-recall", openai_grader(loopback), value="Paris.", vars={}, prompt=prompt)
    assert (result.score, result.passed) == (1.0, True)
    sent = grader_messages(loopback.requests[0])[-1]["content"]
    assert '"content": "Context: Paris is the capital of France."' in sent  # the chat prompt, as JSON


def test_context_relevance(loopback: LoopbackServer) -> None:
    by_system(loopback, {"Copy, word for word": {"relevant_sentences": ["Paris is the capital of France."]}})
    result, _ = judge("context-relevance", openai_grader(loopback), vars=VARS, threshold=0.5)
    assert result.score == pytest.approx(1 / 3)
    assert not result.passed
    assert result.reason.startswith("1 of 3 context sentences are relevant")


def test_context_list_is_joined(loopback: LoopbackServer) -> None:
    by_system(loopback, {"Copy, word for word": {"relevant_sentences": ["A.", "B."]}})
    result, _ = judge(
        "context-relevance", openai_grader(loopback), vars={"query": "q", "context": ["A.", "B."]}
    )
    assert result.score == 1.0


def test_answer_relevance_with_fake_embeddings(loopback: LoopbackServer) -> None:
    query = VARS["query"]
    by_system(
        loopback, {"different questions": {"questions": [query, query, "Which river flows through Paris?"]}}
    )
    choice = ProviderChoice(text=openai_grader(loopback), embedding=ProviderSpec(id="fake"))
    result, _ = judge("answer-relevance", None, vars=VARS, provider=choice, threshold=0.5)
    similarities = result.details["similarities"]
    assert similarities[0] == pytest.approx(1.0) and similarities[1] == pytest.approx(1.0)
    assert similarities[2] < 0.9
    assert result.score == pytest.approx(sum(similarities) / 3)
    assert result.passed and result.details["embedder"] == "fake"


@pytest.mark.slow
def test_answer_relevance_falls_back_to_the_local_model(loopback: LoopbackServer) -> None:
    by_system(loopback, {"different questions": {"questions": ["What is the capital city of France?"]}})
    result, _ = judge("answer-relevance", openai_grader(loopback), vars=VARS, output="Paris.")
    assert result.details["embedder"] == "local"
    assert result.score > 0.8 and result.passed


def test_answer_relevance_needs_a_query(loopback: LoopbackServer) -> None:
    result, _ = judge("answer-relevance", openai_grader(loopback), vars={}, prompt=None)
    assert result.error and "vars.query" in result.reason


def test_split_sentences() -> None:
    assert split_sentences("One. Two! Three?\nFour") == ["One.", "Two!", "Three?", "Four"]


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "answer-relevance": {"output": "Paris is the capital"},
    "context-faithfulness": {"output": "Paris is the capital"},
    "context-recall": {"value": "Paris is the capital of France.", "output": "Paris"},
    "context-relevance": {"output": "Paris"},
}
