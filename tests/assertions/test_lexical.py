"""Lexical metrics: hand-computed cases, edge cases, and agreement with rouge-score, NLTK and sacrebleu."""

from __future__ import annotations

import logging
import math
import random
import re
import string
from collections.abc import Mapping
from typing import Any

import pytest

from evalh.assertions.lexical import (
    bleu_score,
    gleu_score,
    jaccard_score,
    lcs_length,
    normalize_answer,
    rouge_l_scores,
    rouge_n_scores,
    rouge_tokens,
    squad_f1,
)
from evalh.assertions.registry import get_assertion
from evalh.model import AssertionResult, AssertionSpec
from evalh.runner.scoring import finalize
from tests.assertions.helpers import declared_problems, grade, make_context


def run(
    kind: str,
    output: Any,
    value: Any = None,
    config: Mapping[str, Any] | None = None,
    threshold: float | None = None,
) -> AssertionResult:
    return grade(make_context(kind, value=value, output=output, threshold=threshold, config=config))


CAT = "the cat sat on the mat"
CAT_REF = "the cat was on the mat"


# ------------------------------------------------------------------------------- hand-computed


def test_rouge_n_hand_computed() -> None:
    # unigrams in common (clipped): the x2, cat, on, mat = 5 of 6 on each side
    assert rouge_n_scores(CAT, CAT_REF, 1) == pytest.approx({"precision": 5 / 6, "recall": 5 / 6, "f": 5 / 6})
    # bigrams in common: "the cat", "on the", "the mat" = 3 of 5
    assert rouge_n_scores(CAT, CAT_REF, 2)["recall"] == pytest.approx(3 / 5)


def test_rouge_n_clips_repeated_ngrams() -> None:
    scores = rouge_n_scores("the the the the", "the cat", 1)
    assert scores["precision"] == pytest.approx(1 / 4)
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["f"] == pytest.approx(2 * 0.25 * 0.5 / 0.75)


def test_rouge_l_hand_computed() -> None:
    scores = rouge_l_scores(CAT, CAT_REF)
    assert scores["lcs"] == 5  # the cat on the mat
    assert scores["f"] == pytest.approx(5 / 6)
    scores = rouge_l_scores("mat the on", "the cat on the mat")  # LCS "the on" (or "the mat")
    assert scores["lcs"] == 2
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 5)


def test_bleu_hand_computed() -> None:
    details = bleu_score(CAT, [CAT_REF])
    assert details["matches"] == [5, 3, 1, 0]
    assert details["totals"] == [6, 5, 4, 3]
    # the zero 4-gram precision is smoothed to 0.1 / 3 (NLTK method 1); equal lengths: no brevity penalty
    expected = (5 / 6 * 3 / 5 * 1 / 4 * (0.1 / 3)) ** 0.25
    assert details["score"] == pytest.approx(expected)
    assert details["brevity_penalty"] == 1.0


def test_bleu_brevity_penalty_uses_closest_reference_and_prefers_the_shorter_on_ties() -> None:
    hypothesis = "a b c d"  # 4 tokens; references of 2 and 6 tokens are equally close
    details = bleu_score(hypothesis, ["a b", "a b c d e f"])
    assert details["reference_length"] == 2
    assert details["brevity_penalty"] == 1.0
    details = bleu_score("a b c", ["a b c d e f"])
    assert details["brevity_penalty"] == pytest.approx(math.exp(1 - 6 / 3))


def test_bleu_with_no_unigram_in_common_is_zero() -> None:
    assert bleu_score("x y z w", ["a b c d"])["score"] == 0.0
    assert bleu_score("", ["a b c d"])["score"] == 0.0


def test_gleu_hand_computed() -> None:
    # 1..4-grams: 18 on each side; in common 5 + 3 + 1 + 0 = 9 -> min(P, R) = 0.5
    details = gleu_score(CAT + ".", CAT_REF)
    assert details["matches"] == 9
    assert details["score"] == pytest.approx(0.5)
    assert gleu_score("Paris.", "paris")["score"] == 1.0  # identical after normalisation


def test_squad_normalisation_and_f1() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("«An» apple, a day") == "apple day"  # Unicode punctuation goes too
    scores = squad_f1("The Eiffel tower!", "eiffel tower in Paris")
    assert scores["precision"] == 1.0
    assert scores["recall"] == pytest.approx(0.5)
    assert scores["f"] == pytest.approx(2 / 3)
    assert squad_f1("the", "A")["f"] == 1.0  # both normalise to nothing (SQuAD v2.0 rule)
    assert squad_f1("the", "paris")["f"] == 0.0


def test_jaccard_hand_computed() -> None:
    details = jaccard_score("red red blue", "blue green")
    assert (details["intersection"], details["union"]) == (1, 3)
    assert details["score"] == pytest.approx(1 / 3)
    assert jaccard_score("a b c", "a b d", n=2)["score"] == pytest.approx(1 / 3)  # {a b} of {a b, b c, b d}
    assert jaccard_score("", "")["score"] == 1.0


def test_lcs_bit_parallel_matches_dynamic_programming() -> None:
    rng = random.Random(11)
    for _ in range(300):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 15))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 15))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
        assert lcs_length(a, b) == table[-1][-1] == lcs_length(b, a)


def test_unicode_tokens_are_kept_and_case_folded() -> None:
    assert rouge_tokens("Café CRÈME, s'il-vous_plaît") == ["café", "crème", "s", "il", "vous", "plaît"]
    assert rouge_n_scores("café crème", "CAFÉ Crème")["f"] == 1.0
    assert run("exact-match", "  Zürich. ", "zürich").passed


# ------------------------------------------------------------------------------- the assertions


def test_rouge_n_assertion_defaults_and_threshold() -> None:
    assert get_assertion("rouge-n").default_threshold == 0.75  # type: ignore[union-attr]
    result = run("rouge-n", CAT, CAT_REF)
    assert result.passed and result.score == pytest.approx(5 / 6)
    assert result.reason == "ROUGE-1 f 0.8333 is greater than or equal to threshold 0.75"
    result = run("rouge-n", CAT, CAT_REF, {"n": 2})
    assert not result.passed and result.score == pytest.approx(0.6)
    assert result.reason == "ROUGE-2 f 0.6 is less than threshold 0.75"
    assert run("rouge-n", CAT, CAT_REF, {"n": 2}, threshold=0.6).passed
    precision = run("rouge-n", "the the the the", "the cat", {"measure": "precision"})
    assert precision.score == pytest.approx(0.25)
    assert precision.details["recall"] == pytest.approx(0.5)


def test_rouge_n_scores_the_f_measure_as_promptfoo_does() -> None:
    # promptfoo 0.123's rougeNScore: 5 of 5 output words in a 6-word reference -> F 0.909 (recall 0.833)
    output, reference = "Tell me about machine learning", "Tell me about machine learning today"
    result = run("rouge-n", output, reference, threshold=0.9)
    assert result.passed and result.score == pytest.approx(2 * (5 / 6) / (1 + 5 / 6))
    assert not run("rouge-n", output, reference, {"measure": "recall"}, threshold=0.9).passed


def test_several_references_take_the_best() -> None:
    result = run("rouge-l", CAT, ["a dog ran", CAT_REF, "cat"])
    assert result.score == pytest.approx(5 / 6)
    assert result.details["reference_index"] == 1
    assert len(result.details["reference_scores"]) == 3
    assert run("f1", "Paris", ["London", "paris, France"]).score == pytest.approx(2 / 3)
    assert run("gleu", "the cat", ["a dog", "The cat."]).score == 1.0


def test_bleu_assertion_with_several_references() -> None:
    refs = ["the cat is on the mat", "there is a cat on the mat"]
    result = run("bleu", "the cat is on the mat", refs)
    assert result.passed and result.score == pytest.approx(1.0)
    result = run("bleu", CAT, CAT_REF)
    assert not result.passed and result.reason.startswith("BLEU 0.2541 is less than threshold 0.5")
    assert result.details["precisions"][3] == pytest.approx(0.1 / 3)


def test_exact_match_and_negation_reasons() -> None:
    hit = run("exact-match", "The Eiffel Tower.", "eiffel tower")
    assert hit.passed and hit.score == 1.0
    assert hit.reason == "Output matches 'eiffel tower' after normalisation"
    miss = run("exact-match", "Eiffel Tower, Paris", ["eiffel tower", "la tour eiffel"])
    assert not miss.passed and miss.score == 0.0
    negated = finalize(AssertionSpec(type="exact-match", negate=True, value="x"), miss)
    assert negated.passed and negated.score == 1.0


def test_jaccard_assertion_and_empty_output() -> None:
    assert run("jaccard", "red blue", "blue red").score == 1.0
    empty = run("jaccard", "", "blue red")
    assert empty.score == 0.0 and not empty.passed and not empty.error
    for kind in ("rouge-n", "rouge-l", "bleu", "gleu", "f1"):
        result = run(kind, "", "some reference")
        assert result.score == 0.0 and not result.error, kind


def test_non_string_output_is_scored_as_its_json() -> None:
    assert run("rouge-n", {"answer": "paris"}, "answer paris").score == 1.0


@pytest.mark.parametrize(
    ("kind", "value", "config", "problem"),
    [
        ("rouge-n", None, {}, ": missing required key 'value'"),
        ("bleu", [], {}, "value: must have at least 1 item(s)"),
        ("gleu", ["ok", "  "], {}, "value.1: must not be empty or blank"),
        ("rouge-n", "ref", {"n": 0}, "config.n: must be >= 1 (got 0)"),
        ("jaccard", "ref", {"n": "2"}, "config.n: must be a whole number (got a string '2')"),
        ("rouge-l", "ref", {"measure": "f1"}, "config.measure: must be one of 'precision', 'recall', 'f'"),
        ("f1", {"a": 1}, {}, "value: must be a string, a number or a list (got a mapping (key: value))"),
        ("f1", "ref", {"n": 2}, "config.n: unknown key 'n'"),
    ],
)
def test_declared_rules(kind: str, value: Any, config: dict[str, Any], problem: str) -> None:
    # validate refuses these at load (located), so the handlers never see them
    assertion = {"type": kind, "config": config, **({"value": value} if value is not None else {})}
    found = declared_problems(assertion)
    assert any(text.startswith(problem) for text in found), found


def test_declared_rules_accept_good_values() -> None:
    for kind in ("rouge-n", "rouge-l", "bleu", "gleu", "exact-match", "f1", "jaccard"):
        definition = get_assertion(kind)
        assert definition is not None and definition.requires_value and definition.family == "lexical"
        assert declared_problems({"type": kind, "value": ["a reference", 42]}) == []


# --------------------------------------------------------------------- independent implementations


def _random_pairs(seed: int, count: int, min_len: int = 1) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    vocabulary = ["the", "cat", "dog", "sat", "on", "mat", "a", "red", "blue", "ran", "The", "Cat"]

    def sentence() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(min_len, 14)))

    return [(sentence(), [sentence() for _ in range(rng.randint(1, 3))]) for _ in range(count)]


def test_rouge_matches_google_rouge_score() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rouge3", "rougeL"], use_stemmer=False)
    pairs = [*_random_pairs(3, 200), ("Hello, world! It's 2024.", ["hello world its 2024"])]
    for candidate, references in pairs:
        expected = scorer.score(references[0], candidate)
        ours = {
            "rouge1": rouge_n_scores(candidate, references[0], 1),
            "rouge2": rouge_n_scores(candidate, references[0], 2),
            "rouge3": rouge_n_scores(candidate, references[0], 3),
            "rougeL": rouge_l_scores(candidate, references[0]),
        }
        for key, score in expected.items():
            assert ours[key]["precision"] == pytest.approx(score.precision), (key, candidate)
            assert ours[key]["recall"] == pytest.approx(score.recall), (key, candidate)
            assert ours[key]["f"] == pytest.approx(score.fmeasure), (key, candidate)


def test_bleu_matches_nltk_sentence_bleu_method1() -> None:
    bleu_module = pytest.importorskip("nltk.translate.bleu_score")
    smoothing = bleu_module.SmoothingFunction().method1
    for candidate, references in _random_pairs(5, 300):
        expected = bleu_module.sentence_bleu(
            [r.lower().split() for r in references], candidate.lower().split(), smoothing_function=smoothing
        )
        assert bleu_score(candidate, references)["score"] == pytest.approx(expected, abs=1e-12), candidate


def test_bleu_matches_sacrebleu_floor_smoothing_for_sentences_of_four_tokens_or_more() -> None:
    # sacrebleu counts a missing n-gram order (hypothesis shorter than n) as precision 0, NLTK as 0/1
    # smoothed: they agree once the hypothesis has at least 4 tokens.
    sacrebleu = pytest.importorskip("sacrebleu")
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    for candidate, references in _random_pairs(9, 200, min_len=4):
        expected = sacrebleu.sentence_bleu(
            candidate,
            references,
            smooth_method="floor",
            smooth_value=0.1,
            tokenize="none",
            lowercase=True,
            use_effective_order=False,
        )
        assert bleu_score(candidate, references)["score"] == pytest.approx(expected.score / 100, abs=1e-9)


def test_gleu_matches_nltk_sentence_gleu() -> None:
    gleu_module = pytest.importorskip("nltk.translate.gleu_score")
    for candidate, references in _random_pairs(13, 300):
        expected = gleu_module.sentence_gleu(
            [r.lower().split() for r in references], candidate.lower().split()
        )
        ours = max(gleu_score(candidate, reference)["score"] for reference in references)
        if candidate.lower().split() in [r.lower().split() for r in references]:
            expected = 1.0  # promptfoo's identical-text rule (NLTK agrees unless shorter than 4 tokens)
        assert ours == pytest.approx(expected, abs=1e-12), candidate


def _squad_official_normalize(text: str) -> str:
    """The SQuAD v1.1 evaluation script's normalize_answer, written out independently."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def test_squad_normalisation_matches_the_official_script_on_ascii() -> None:
    samples = ["The Cat's hat!", "an  apple (a day)", "A-B the C", "Theatre the", "x.y,z", "  "]
    for sample in samples:
        assert normalize_answer(sample) == _squad_official_normalize(sample), sample


def test_jaccard_matches_nltk_jaccard_distance() -> None:
    distance = pytest.importorskip("nltk.metrics.distance")
    for candidate, references in _random_pairs(17, 100):
        a, b = set(rouge_tokens(candidate)), set(rouge_tokens(references[0]))
        expected = 1 - distance.jaccard_distance(a, b)
        assert jaccard_score(candidate, references[0])["score"] == pytest.approx(expected)


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "rouge-n": {"value": "the capital is Paris", "output": "The capital is Paris.", "config": {"n": 2}},
    "rouge-l": {"value": "the capital is Paris", "output": "The capital is Paris."},
    "bleu": {"value": ["the capital is Paris", "Paris"], "output": "The capital is Paris"},
    "gleu": {"value": "the capital is Paris", "output": "Paris is the capital"},
    "exact-match": {"value": "Paris", "output": "paris."},
    "f1": {"value": "Paris", "output": "Paris, France"},
    "jaccard": {"value": "Paris France", "output": "France Paris"},
}
