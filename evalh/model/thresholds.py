"""The one comparison of a score with a threshold. ``runner/scoring.py`` decides every verdict with it; a
judge asked several times (``samples``, several graders) votes with each sample's verdict, decided by the
same comparison (``assertions/judge_votes.py``). tests/runner/test_threshold_contract.py holds that no
other code compares with a threshold."""

from __future__ import annotations

from typing import Literal

__all__ = ["meets"]

# Scores computed two ways (a cosine of equal vectors, a mean of means) may differ in the last bit.
_EPSILON = 1e-12


def meets(value: float, threshold: float, direction: Literal["higher", "lower"]) -> bool:
    """Whether ``value`` passes ``threshold`` for a type whose ``direction`` is better."""
    if direction == "lower":
        return value <= threshold + _EPSILON
    return value >= threshold - _EPSILON
