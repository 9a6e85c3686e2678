"""Lexical overlap metrics: rouge-n, rouge-l, bleu, gleu, exact-match, f1 and jaccard.

Every metric compares the output with one reference (a string ``value``) or several (a list: the best
reference wins), returns a score in [0, 1] with the intermediate numbers in ``details``, and passes when
the score reaches the threshold. Which reference implementation each one reproduces (docs/metrics.md):

* ``rouge-n``: promptfoo 0.123's ``rougeNScore``: clipped n-gram counts over js-rouge's Penn Treebank
  tokens of the lower-cased texts (punctuation marks are tokens, ``don't`` is ``do n't``), F-measure.
* ``rouge-l`` (and ``rouge_n_scores`` by default): Google's ``rouge-score`` without stemming (tokens:
  lower-cased runs of letters and digits; unlike rouge-score, non-ASCII letters are kept instead of
  dropped), the F-measure by default.
* ``bleu``: NLTK ``sentence_bleu`` with ``SmoothingFunction().method1`` (epsilon 0.1) over lower-cased
  whitespace tokens (promptfoo's tokenisation), uniform weights up to 4-grams, brevity penalty against
  the closest reference length.
* ``gleu``: NLTK ``sentence_gleu`` (min of n-gram precision and recall, 1- to 4-grams) with promptfoo's
  normalisation (lower-cased, trailing periods stripped).
* ``exact-match`` / ``f1``: the SQuAD v1.1 evaluation script's normalisation (lower case, punctuation and
  articles removed, whitespace collapsed); Unicode punctuation is removed too, and empty answers follow
  SQuAD v2.0 (f1 = 1 only when both sides are empty).
* ``jaccard``: |A ∩ B| / |A ∪ B| over the sets of word n-grams (ROUGE tokens).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from evalh.assertions.registry import NONBLANK_TEXT, output_check
from evalh.model import AssertionSpec, Measurement

__all__ = [
    "REFERENCES_VALUE",
    "bleu_score",
    "gleu_score",
    "jaccard_score",
    "lcs_length",
    "min_score",
    "ngrams",
    "normalize_answer",
    "promptfoo_rouge_tokens",
    "references_of",
    "rouge_l_scores",
    "rouge_n_scores",
    "rouge_tokens",
    "squad_f1",
]

_NON_WORD = re.compile(r"[\W_]+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_BLEU_EPSILON = 0.1  # NLTK SmoothingFunction().method1


# ------------------------------------------------------------------------------------ tokenising


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's tokens: lower case, every run of non-alphanumerics is a separator."""
    return _NON_WORD.sub(" ", text.lower()).split()


def _bleu_tokens(text: str) -> list[str]:
    return text.lower().split()


def _gleu_tokens(text: str) -> list[str]:
    return text.lower().strip().rstrip(".").split()


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def normalize_answer(text: str) -> str:
    """SQuAD's ``normalize_answer``: lower case, drop punctuation and articles, collapse whitespace."""
    lowered = text.lower()
    no_punctuation = "".join(char for char in lowered if not _is_punctuation(char))
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    """The multiset of the ``n``-grams of ``tokens``."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


# ------------------------------------------------------------------------------------ the metrics


def _prf(overlap: float, candidate_total: float, reference_total: float) -> dict[str, float]:
    precision = overlap / candidate_total if candidate_total > 0 else 0.0
    recall = overlap / reference_total if reference_total > 0 else 0.0
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": precision, "recall": recall, "f": f}


def promptfoo_rouge_tokens(text: str) -> list[str]:
    """promptfoo's rouge-n tokens: the lower-cased text through js-rouge's Penn Treebank tokenizer."""
    from evalh.assertions.treebank import treebank_tokens  # its 25 patterns: compiled by the first rouge-n

    return treebank_tokens(text.lower())


def rouge_n_scores(
    candidate: str, reference: str, n: int = 1, tokenize: Callable[[str], list[str]] = rouge_tokens
) -> dict[str, float]:
    """ROUGE-N precision, recall and F1 (clipped n-gram overlap), as rouge-score computes them (with
    ``promptfoo_rouge_tokens``, as promptfoo 0.123's rouge-n does)."""
    candidate_grams = ngrams(tokenize(candidate), n)
    reference_grams = ngrams(tokenize(reference), n)
    overlap = sum((candidate_grams & reference_grams).values())
    return _prf(overlap, candidate_grams.total(), reference_grams.total())


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö): len(b) steps."""
    positions: dict[Hashable, int] = {}
    for index, item in enumerate(a):
        positions[item] = positions.get(item, 0) | (1 << index)
    mask = (1 << len(a)) - 1
    row = mask  # a 1 bit at index i means "a[i] not yet used by the LCS"
    for item in b:
        matches = row & positions.get(item, 0)
        row = ((row + matches) | (row - matches)) & mask
    return len(a) - row.bit_count()


def rouge_l_scores(candidate: str, reference: str) -> dict[str, float]:
    """ROUGE-L precision, recall and F1 over the longest common token subsequence (rouge-score's rougeL)."""
    candidate_tokens, reference_tokens = rouge_tokens(candidate), rouge_tokens(reference)
    lcs = lcs_length(reference_tokens, candidate_tokens)
    return {"lcs": lcs, **_prf(lcs, len(candidate_tokens), len(reference_tokens))}


def bleu_score(candidate: str, references: Sequence[str], max_n: int = 4) -> dict[str, Any]:
    """Sentence BLEU as NLTK's ``sentence_bleu(..., smoothing_function=method1)`` with uniform weights."""
    hypothesis = _bleu_tokens(candidate)
    reference_tokens = [_bleu_tokens(reference) for reference in references]
    matches: list[int] = []
    totals: list[int] = []
    for n in range(1, max_n + 1):
        hyp_grams = ngrams(hypothesis, n)
        max_ref: Counter[tuple[str, ...]] = Counter()
        for tokens in reference_tokens:
            max_ref |= ngrams(tokens, n)
        matches.append(sum(min(count, max_ref[gram]) for gram, count in hyp_grams.items()))
        totals.append(max(1, hyp_grams.total()))
    hyp_len = len(hypothesis)
    ref_len = min(
        (len(tokens) for tokens in reference_tokens), key=lambda length: (abs(length - hyp_len), length)
    )
    brevity = 1.0 if hyp_len > ref_len else (math.exp(1 - ref_len / hyp_len) if hyp_len else 0.0)
    precisions = [(m if m else _BLEU_EPSILON) / t for m, t in zip(matches, totals, strict=True)]
    # NLTK: no unigram in common means 0, whatever the smoothing.
    score = brevity * math.exp(math.fsum(math.log(p) / max_n for p in precisions)) if matches[0] else 0.0
    return {
        "score": score,
        "precisions": precisions,
        "matches": matches,
        "totals": totals,
        "brevity_penalty": brevity,
        "hypothesis_length": hyp_len,
        "reference_length": ref_len,
    }


def gleu_score(candidate: str, reference: str, min_n: int = 1, max_n: int = 4) -> dict[str, float]:
    """Sentence GLEU as NLTK's ``sentence_gleu``: min(precision, recall) of all 1..4-grams together."""
    hypothesis, ref_tokens = _gleu_tokens(candidate), _gleu_tokens(reference)
    hyp_grams: Counter[tuple[str, ...]] = Counter()
    ref_grams: Counter[tuple[str, ...]] = Counter()
    for n in range(min_n, max_n + 1):
        hyp_grams.update(ngrams(hypothesis, n))
        ref_grams.update(ngrams(ref_tokens, n))
    overlap = sum((hyp_grams & ref_grams).values())
    denominator = max(hyp_grams.total(), ref_grams.total())
    score = overlap / denominator if denominator else 0.0
    if hypothesis == ref_tokens:
        score = 1.0  # promptfoo: identical texts score 1, even when shorter than min_n
    return {
        "score": score,
        "matches": overlap,
        "hypothesis_ngrams": hyp_grams.total(),
        "reference_ngrams": ref_grams.total(),
    }


def squad_f1(prediction: str, truth: str) -> dict[str, float]:
    """SQuAD token F1 over normalised answers (v2.0's rule when either side normalises to nothing)."""
    pred_tokens, truth_tokens = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not pred_tokens or not truth_tokens:
        same = float(pred_tokens == truth_tokens)
        return {"precision": same, "recall": same, "f": same, "common": 0.0}
    common = sum((Counter(pred_tokens) & Counter(truth_tokens)).values())
    return {"common": float(common), **_prf(common, len(pred_tokens), len(truth_tokens))}


def jaccard_score(candidate: str, reference: str, n: int = 1) -> dict[str, float]:
    """|A ∩ B| / |A ∪ B| of the sets of word n-grams; two empty sets are identical (1.0)."""
    a, b = set(ngrams(rouge_tokens(candidate), n)), set(ngrams(rouge_tokens(reference), n))
    union = len(a | b)
    return {"score": len(a & b) / union if union else 1.0, "intersection": len(a & b), "union": union}


# ----------------------------------------------------------------------------------- assertions

Scorer = Callable[[str, str], Mapping[str, Any]]  # (output, reference) -> details with a "score"


def references_of(value: Any) -> list[str] | None:
    """The reference texts of a ``value``: a string or number, or a list of them; None if neither."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list | tuple):
        texts = [references_of(item) for item in value]
        if all(text is not None and len(text) == 1 for text in texts):
            return [text[0] for text in texts if text]
    return None


def min_score(label: str, score: float, **details: Any) -> Measurement:
    """A 0-1 metric named ``label``; scoring.py compares it with the (minimum) threshold."""
    return Measurement(value=score, subject=f"{label} {score:.4g}", details={"score": score, **details})


# Declared once: the schema's per-type rules are generated from these, and validate checks every
# rendered value against them, so the handlers below take the references as given.
_REFERENCE: dict[str, Any] = {"anyOf": [NONBLANK_TEXT, {"type": "number"}]}
REFERENCES_VALUE: Mapping[str, Any] = {
    "anyOf": [*_REFERENCE["anyOf"], {"type": "array", "minItems": 1, "items": _REFERENCE}],
    "description": "The reference text, or a list of references (the best counts).",
}
_MEASURES = ("precision", "recall", "f")
_N_GRAMS: dict[str, Any] = {"type": "integer", "minimum": 1, "description": "The n-gram length."}
_MEASURE: dict[str, Any] = {"enum": list(_MEASURES), "description": "Which ROUGE figure to compare."}


def _references(value: Any) -> list[str]:
    return references_of(value) or []


def _graded(value: Any, output: str, label: str, scorer: Scorer) -> Measurement:
    """Score the output (its text) against every reference in ``value`` with ``scorer``; keep the best."""
    references = _references(value)
    per_reference = [scorer(output, reference) for reference in references]
    scores = [float(details["score"]) for details in per_reference]
    best = max(range(len(scores)), key=scores.__getitem__)
    extra: dict[str, Any] = {**per_reference[best]}
    extra.pop("score")
    if len(references) > 1:
        extra.update(reference_index=best, reference_scores=scores)
    return min_score(label, scores[best], **extra)


def _measured(scores: Mapping[str, float], measure: str) -> dict[str, float]:
    return {**scores, "score": scores[measure]}


@output_check(
    "rouge-n",
    family="lexical",
    description="ROUGE-N F-measure against the reference (promptfoo's tokens; config.n, default 1)",
    default_threshold=0.75,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
    config_schema={"n": _N_GRAMS, "measure": _MEASURE},
)
def rouge_n(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    # promptfoo 0.123 scores with js-rouge 3's n(): the F-measure (beta 1) of precision and recall
    n, measure = int(spec.config.get("n", 1)), str(spec.config.get("measure", "f"))
    return _graded(
        spec.value,
        text,
        f"ROUGE-{n} {measure}",
        lambda out, ref: _measured(rouge_n_scores(out, ref, n, promptfoo_rouge_tokens), measure),
    )


@output_check(
    "rouge-l",
    family="lexical",
    description="ROUGE-L: longest-common-subsequence F-measure with the reference (config.measure to change)",
    default_threshold=0.75,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
    config_schema={"measure": _MEASURE},
)
def rouge_l(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    measure = str(spec.config.get("measure", "f"))
    return _graded(
        spec.value,
        text,
        f"ROUGE-L {measure}",
        lambda out, ref: _measured(rouge_l_scores(out, ref), measure),
    )


@output_check(
    "bleu",
    family="lexical",
    description="Sentence BLEU (n-grams up to config.n, default 4; NLTK smoothing method 1) vs references",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
    config_schema={"n": _N_GRAMS},
)
def bleu(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    details = bleu_score(text, _references(spec.value), int(spec.config.get("n", 4)))
    score = float(details.pop("score"))
    return min_score("BLEU", score, **details)


@output_check(
    "gleu",
    family="lexical",
    description="Sentence GLEU (min of 1..4-gram precision and recall); the best of several references",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
    config_schema={"n": _N_GRAMS},
)
def gleu(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    max_n = int(spec.config.get("n", 4))
    return _graded(spec.value, text, "GLEU", lambda out, ref: gleu_score(out, ref, 1, max_n))


@output_check(
    "exact-match",
    family="lexical",
    description="SQuAD exact match: equal to a reference once case, punctuation and articles are normalised",
    threshold_meaning="min score (optional; without one the output must match)",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
)
def exact_match(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    references = _references(spec.value)
    normalized = normalize_answer(text)
    matched = [ref for ref in references if normalize_answer(ref) == normalized]
    details = {
        "normalized_output": normalized,
        "normalized_references": [normalize_answer(r) for r in references],
    }
    shown = matched[0] if matched else references[0] if len(references) == 1 else references
    words = "matches" if matched else "does not match"
    return Measurement(
        value=1.0 if matched else 0.0,
        subject=f"Exact match {1 if matched else 0}",
        suffix=f" (output {words} {shown!r} after normalisation)",
        plain=f"Output {words} {shown!r} after normalisation",
        details=details,
    )


@output_check(
    "f1",
    family="lexical",
    description="SQuAD token F1 between the normalised output and the best reference",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
)
def token_f1(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    return _graded(spec.value, text, "Token F1", lambda out, ref: _measured(squad_f1(out, ref), "f"))


@output_check(
    "jaccard",
    family="lexical",
    description="Jaccard similarity of the word sets (word n-gram sets with config.n)",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=REFERENCES_VALUE,
    config_schema={"n": _N_GRAMS},
)
def jaccard(spec: AssertionSpec, _output: Any, text: str) -> Measurement:
    n = int(spec.config.get("n", 1))
    return _graded(spec.value, text, "Jaccard", lambda out, ref: jaccard_score(out, ref, n))
