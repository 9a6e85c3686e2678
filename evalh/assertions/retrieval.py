"""Retrieval-ranking metrics over a ranked list of retrieved ids or passages.

The ranked list comes from the output (a JSON list, or the list at ``config.listField`` of a JSON
object; a fenced ```json block is accepted) or from the test var named by ``config.fromVar``. Items are
ids (strings or numbers) or objects whose id is ``config.idField`` (default ``id``) and whose text is
``config.textField`` (default ``text``). ``config.k`` cuts the list (default: the whole list).

``value`` names the relevant ids: one id, a list of ids (binary relevance) or a mapping ``{id: gain}``
(graded relevance; an id with gain 0 is judged not relevant). Ids are compared as strings, so 3 and "3"
are the same id. A repeated id earns credit once, at its first rank; later copies still take their
place in the top k (as a wasted slot). The definitions follow trec_eval: ``precision@k`` divides by k
even when fewer than k items were retrieved; ``ndcg@k`` uses linear gains (``config.gain:
exponential`` for 2^gain - 1) and log2(rank + 1) discounts over the ideal DCG of all relevant ids.

``answer-containment-at-k`` reads passages instead and checks that an expected answer (``value``: a
string or a list of acceptable answers) appears in one of the top-k passages, as DPR's ``has_answer``:
the SQuAD-normalised answer tokens must appear as a contiguous run of the passage's normalised tokens.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.lexical import REFERENCES_VALUE, min_score, normalize_answer, references_of
from evalh.assertions.registry import assertion
from evalh.assertions.strings import parse_json_output
from evalh.model import AssertionResult, Measurement

__all__ = [
    "LIST_CONFIG",
    "Ranking",
    "contains_answer",
    "item_id",
    "item_text",
    "ndcg",
    "rank",
    "ranked_items",
    "relevance_of",
]

_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```$", re.DOTALL)
_DETAIL_LIMIT = 50  # ids listed in details


# ---------------------------------------------------------------------------------- reading input


def _scalar_id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str | int | float):
        return unicodedata.normalize("NFC", str(value).strip())
    return None


def ranked_items(ctx: AssertionContext) -> list[Any] | str:
    """The ranked list from the output or ``config.fromVar``, or a problem text."""
    var_name = ctx.config.get("fromVar")
    if var_name is not None:
        if var_name not in ctx.vars:
            return f"var {var_name!r} (config.fromVar) is not set for this test"
        source, where = ctx.vars[var_name], f"var {var_name!r}"
    else:
        source, where = ctx.output, "the output"
    if isinstance(source, str):
        fenced = _FENCE.match(source.strip())
        parsed, source, problem = parse_json_output(fenced.group(1) if fenced else source)
        if not parsed:
            return f"needs {where} to be a JSON list of ids or passages ({problem})"
    list_field = ctx.config.get("listField")
    if list_field:
        for key in str(list_field).split("."):
            if not isinstance(source, Mapping) or key not in source:
                return f"{where} has no field {list_field!r} (config.listField)"
            source = source[key]
    if not isinstance(source, list):
        hint = "; set config.listField to the list inside it" if isinstance(source, Mapping) else ""
        return f"needs {where} to be a JSON list, got {type(source).__name__}{hint}"
    return source


def item_id(item: Any, id_field: str) -> str | None:
    """The id of a retrieved item: the item itself, or its ``id_field``."""
    if isinstance(item, Mapping):
        return _scalar_id(item.get(id_field))
    return _scalar_id(item)


def item_text(item: Any, text_field: str) -> str | None:
    """The text of a retrieved passage: the item itself, or its ``text_field``."""
    if isinstance(item, Mapping):
        text = item.get(text_field)
        return text if isinstance(text, str) else None
    return item if isinstance(item, str) else None


def relevance_of(value: Any) -> dict[str, float] | None:
    """``{id: gain}`` from one id, a list of ids, or a mapping of gains; None if malformed."""
    if isinstance(value, Mapping):
        gains: dict[str, float] = {}
        for key, gain in value.items():
            if isinstance(gain, bool) or not isinstance(gain, int | float) or gain < 0 or math.isnan(gain):
                return None
            gains[str(key).strip()] = float(gain)
        return gains
    items = value if isinstance(value, list | tuple) else [value]
    ids = [_scalar_id(item) for item in items]
    if any(item is None for item in ids):
        return None
    return {item: 1.0 for item in ids if item is not None}


# ----------------------------------------------------------------------------------- the ranking


@dataclass(frozen=True)
class Ranking:
    """The top k of a ranked list, with the credit each position earns."""

    ids: tuple[str, ...]  # the whole list, as retrieved
    k: int
    gains: tuple[float, ...]  # per top-k position: the gain earned (0 for irrelevant or repeated ids)
    relevance: Mapping[str, float]

    @property
    def top(self) -> tuple[str, ...]:
        return self.ids[: self.k]

    @property
    def hit_ranks(self) -> list[int]:
        return [index + 1 for index, gain in enumerate(self.gains) if gain > 0]

    @property
    def relevant(self) -> list[str]:
        return [key for key, gain in self.relevance.items() if gain > 0]

    def details(self) -> dict[str, Any]:
        found = {self.top[rank - 1] for rank in self.hit_ranks}
        repeated = sorted(item for item, count in Counter(self.ids).items() if count > 1)
        return {
            "k": self.k,
            "retrieved": len(self.ids),
            "top_k": list(self.top[:_DETAIL_LIMIT]),
            "hit_ranks": self.hit_ranks,
            "relevant_found": [i for i in self.relevant if i in found][:_DETAIL_LIMIT],
            "relevant_missing": [i for i in self.relevant if i not in found][:_DETAIL_LIMIT],
            **({"repeated_ids": repeated[:_DETAIL_LIMIT]} if repeated else {}),
        }


def rank(ids: Sequence[str], relevance: Mapping[str, float], k: int | None) -> Ranking:
    """Credit each of the top ``k`` ids (all when None) with its gain, once per distinct id."""
    cut = len(ids) if k is None else k
    seen: set[str] = set()
    gains: list[float] = []
    for item in ids[:cut]:
        gains.append(0.0 if item in seen else relevance.get(item, 0.0))
        seen.add(item)
    return Ranking(ids=tuple(ids), k=cut, gains=tuple(gains), relevance=dict(relevance))


def _ranking(ctx: AssertionContext) -> Ranking | AssertionResult:
    """The ranking of the output's (or the var's) list; what the run found wrong with that list is an
    ERROR (the value and config were validated at load)."""
    items = ranked_items(ctx)
    if isinstance(items, str):
        return AssertionResult.failure(items)
    id_field = str(ctx.config.get("idField", "id"))
    ids = [item_id(item, id_field) for item in items]
    bad = next((index for index, item in enumerate(ids) if item is None), None)
    if bad is not None:
        return AssertionResult.failure(
            f"item {bad} of the ranked list has no id (a string, a number, or an object with "
            f"{id_field!r}): {json.dumps(items[bad], ensure_ascii=False, default=str)[:80]}"
        )
    relevance = relevance_of(ctx.value) or {}
    k = ctx.config.get("k")
    return rank([item for item in ids if item is not None], relevance, int(k) if k is not None else None)


# --------------------------------------------------------------------------------- static checks


_FIELD: dict[str, Any] = {"type": "string", "minLength": 1}
# The list options every type of this family reads (answer-containment reads passages, not ids).
LIST_CONFIG: Mapping[str, Any] = {
    "k": {"type": "integer", "minimum": 1, "description": "Only the top k items count (default: all)."},
    "fromVar": {**_FIELD, "description": "Read the ranked list from this var instead of the output."},
    "listField": {**_FIELD, "description": "The list is this (dotted) field of the output's JSON object."},
}
_IDS_CONFIG: dict[str, Any] = {
    **LIST_CONFIG,
    "idField": {**_FIELD, "description": "The id field of an object item (default id)."},
}
_NDCG_CONFIG: dict[str, Any] = {
    **_IDS_CONFIG,
    "gain": {"enum": ["linear", "exponential"], "description": "Gains as given, or 2^gain - 1."},
}
_ID: dict[str, Any] = {"type": ["string", "number"]}
_IDS_VALUE: dict[str, Any] = {
    "anyOf": [
        _ID,
        {"type": "array", "minItems": 1, "items": _ID},
        {"type": "object", "minProperties": 1, "additionalProperties": {"type": "number", "minimum": 0}},
    ],
    "description": "The relevant ids: one id, a list of ids, or a mapping {id: gain}.",
}


def _check_ids(value: Any, _config: Mapping[str, Any]) -> str | None:
    """What the value's shape cannot say: some id is relevant (an id or list has gain 1)."""
    relevance = relevance_of(value) or {}
    return None if any(gain > 0 for gain in relevance.values()) else "needs a relevant id (a gain above 0)"


# ------------------------------------------------------------------------------ ranking metrics


def _with_note(measurement: Measurement, note: str) -> Measurement:
    return dataclasses.replace(measurement, suffix=f" ({note})")


@assertion(
    "retrieval-hit-at-k",
    family="retrieval",
    description="At least one relevant id is among the top k retrieved (score 1 or 0)",
    threshold_meaning="min score (optional; without one a hit is needed)",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=_IDS_VALUE,
    config_schema=_IDS_CONFIG,
    check=_check_ids,
)
def hit_at_k(ctx: AssertionContext) -> AssertionResult | Measurement:
    ranking = _ranking(ctx)
    if isinstance(ranking, AssertionResult):
        return ranking
    ranks = ranking.hit_ranks
    if ranks:
        found = f"relevant id {ranking.top[ranks[0] - 1]!r} is at rank {ranks[0]} of the top {ranking.k}"
    else:
        found = f"no relevant id is in the top {ranking.k} ({len(ranking.ids)} retrieved)"
    return _binary("Hit", bool(ranks), found, ranking.details())


def _binary(label: str, hit: bool, found: str, details: Mapping[str, Any]) -> Measurement:
    """A 0/1 measurement: without a threshold it passes on a hit, and ``found`` is the reason."""
    return Measurement(
        value=1.0 if hit else 0.0,
        subject=f"{label} {1 if hit else 0}",
        suffix=f" ({found})",
        plain=found[0].upper() + found[1:],
        details=details,
    )


@assertion(
    "retrieval-recall-at-k",
    family="retrieval",
    description="Share of the relevant ids found in the top k retrieved",
    default_threshold=1.0,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=_IDS_VALUE,
    config_schema=_IDS_CONFIG,
    check=_check_ids,
)
def recall_at_k(ctx: AssertionContext) -> AssertionResult | Measurement:
    ranking = _ranking(ctx)
    if isinstance(ranking, AssertionResult):
        return ranking
    found, relevant = len(ranking.hit_ranks), len(ranking.relevant)
    score = found / relevant
    result = min_score(f"Recall@{ranking.k}", score, **ranking.details())
    return _with_note(result, f"{found} of {relevant} relevant ids found")


@assertion(
    "retrieval-precision-at-k",
    family="retrieval",
    description="Share of the top k positions holding a relevant id (divides by k, as trec_eval)",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=_IDS_VALUE,
    config_schema=_IDS_CONFIG,
    check=_check_ids,
)
def precision_at_k(ctx: AssertionContext) -> AssertionResult | Measurement:
    ranking = _ranking(ctx)
    if isinstance(ranking, AssertionResult):
        return ranking
    found = len(ranking.hit_ranks)
    score = found / ranking.k if ranking.k else 0.0
    result = min_score(f"Precision@{ranking.k}", score, **ranking.details())
    return _with_note(result, f"{found} relevant in the top {ranking.k}")


@assertion(
    "retrieval-mrr",
    family="retrieval",
    description="Reciprocal rank of the first relevant id (within config.k when set)",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=_IDS_VALUE,
    config_schema=_IDS_CONFIG,
    check=_check_ids,
)
def reciprocal_rank(ctx: AssertionContext) -> AssertionResult | Measurement:
    ranking = _ranking(ctx)
    if isinstance(ranking, AssertionResult):
        return ranking
    ranks = ranking.hit_ranks
    score = 1.0 / ranks[0] if ranks else 0.0
    result = min_score("Reciprocal rank", score, **ranking.details())
    note = f"first relevant id at rank {ranks[0]}" if ranks else f"no relevant id in the top {ranking.k}"
    return _with_note(result, note)


def ndcg(ranking: Ranking, exponential: bool = False) -> dict[str, float]:
    """nDCG of the ranking's top k: DCG / ideal DCG, discounts log2(rank + 1)."""

    def gain(value: float) -> float:
        return 2.0**value - 1.0 if exponential else value

    dcg = math.fsum(gain(g) / math.log2(index + 2) for index, g in enumerate(ranking.gains))
    ideal = sorted((g for g in ranking.relevance.values() if g > 0), reverse=True)[: ranking.k]
    idcg = math.fsum(gain(g) / math.log2(index + 2) for index, g in enumerate(ideal))
    return {"score": dcg / idcg if idcg > 0 else 0.0, "dcg": dcg, "idcg": idcg}


@assertion(
    "retrieval-ndcg-at-k",
    family="retrieval",
    description="Normalised discounted cumulative gain of the top k (graded gains from a {id: gain} value)",
    default_threshold=0.5,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=_IDS_VALUE,
    config_schema=_NDCG_CONFIG,
    check=_check_ids,
)
def ndcg_at_k(ctx: AssertionContext) -> AssertionResult | Measurement:
    ranking = _ranking(ctx)
    if isinstance(ranking, AssertionResult):
        return ranking
    scores = ndcg(ranking, exponential=ctx.config.get("gain") == "exponential")
    score = scores.pop("score")
    return min_score(f"nDCG@{ranking.k}", score, **scores, **ranking.details())


# --------------------------------------------------------------------------- answer containment


def contains_answer(passage: str, answer: str) -> bool:
    """DPR-style has_answer: the normalised answer tokens appear contiguously in the normalised passage.

    An answer that normalises to nothing (such as "A") is searched as a case-folded substring instead.
    """
    needle = normalize_answer(answer).split()
    if not needle:
        return " ".join(answer.casefold().split()) in " ".join(passage.casefold().split())
    haystack = normalize_answer(passage).split()
    width = len(needle)
    return any(haystack[i : i + width] == needle for i in range(len(haystack) - width + 1))


@assertion(
    "answer-containment-at-k",
    family="retrieval",
    description="The expected answer text appears in one of the top k retrieved passages",
    threshold_meaning="min score (optional; without one a hit is needed)",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema={**REFERENCES_VALUE, "description": "The expected answer, or a list of acceptable answers."},
    config_schema={
        **LIST_CONFIG,
        "textField": {**_FIELD, "description": "The text field of an object passage (default text)."},
    },
)
def answer_containment_at_k(ctx: AssertionContext) -> AssertionResult | Measurement:
    answers = references_of(ctx.value) or []
    items = ranked_items(ctx)
    if isinstance(items, str):
        return AssertionResult.failure(items)
    text_field = str(ctx.config.get("textField", "text"))
    texts = [item_text(item, text_field) for item in items]
    bad = next((index for index, text in enumerate(texts) if text is None), None)
    if bad is not None:
        return AssertionResult.failure(f"passage {bad} is neither a string nor an object with {text_field!r}")
    k = int(ctx.config.get("k", len(texts)))
    hits = (
        (position + 1, a)
        for position, text in enumerate(texts[:k])
        for a in answers
        if contains_answer(text or "", a)
    )
    first = next(hits, None)
    details = {"k": k, "retrieved": len(texts), "rank": first[0] if first else None}
    if first:
        found = f"answer {first[1]!r} appears in passage {first[0]} of the top {k}"
        return _binary("Containment", True, found, {**details, "answer": first[1]})
    shown = answers[0] if len(answers) == 1 else answers
    found = f"answer {shown!r} does not appear in the top {k} passages ({len(texts)} retrieved)"
    return _binary("Containment", False, found, details)
