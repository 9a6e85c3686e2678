"""``ordinal-distance``: how far the output's label is from the expected one on an ordered scale.

``config.scale`` lists the labels in order (``[low, medium, high, urgent]``, or numbers for a Likert
scale). With n labels, the output's label at index i and the expected label (``value``) at index j score
``1 - |i - j| / (n - 1)``: 1 for the right label, 0 for the opposite end of the scale.

The output's label is the whole output, trimmed of whitespace, surrounding quotes and trailing
punctuation, compared case-insensitively; with ``config.field`` it is that field of the output's JSON
object. A label that is not on the scale cannot be scored: the assertion is an error naming the scale.
The default threshold 1.0 asks for the exact label; lower it to accept near misses (on a 4-label scale,
``threshold: 0.66`` accepts one step off).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import NONBLANK_TEXT, assertion
from evalh.assertions.strings import parse_json_output
from evalh.model import AssertionResult, Measurement

__all__ = ["label_key", "ordinal_score", "read_label", "scale_of"]

_NAME = "ordinal-distance"
_TRIM = " \t\r\n\"'`“”‘’.,;:!?"


def label_key(label: Any) -> str:
    """How labels are compared: trimmed, whitespace collapsed, NFC-normalised, case-folded."""
    if isinstance(label, float) and label.is_integer():
        label = int(label)
    return unicodedata.normalize("NFC", " ".join(str(label).strip(_TRIM).split())).casefold()


def scale_of(config: Mapping[str, Any]) -> list[str] | str:
    """The labels of ``config.scale`` in order, or a problem text."""
    scale = config.get("scale")  # its shape is declared in _CONFIG and checked by validate
    if scale is None:
        return "needs config.scale: an ordered list of labels"
    labels = [str(int(x)) if isinstance(x, float) and x.is_integer() else str(x) for x in scale]
    keys = [label_key(label) for label in labels]
    if "" in keys:
        return "needs config.scale labels to be non-empty"
    repeated = sorted({label for label, key in zip(labels, keys, strict=True) if keys.count(key) > 1})
    if repeated:
        return f"needs distinct labels in config.scale (repeated, ignoring case: {', '.join(repeated)})"
    return labels


def _show(scale: Sequence[str]) -> str:
    return " < ".join(scale)


def ordinal_score(actual: int, expected: int, size: int) -> float:
    """1 - |i - j| / (n - 1)."""
    return 1.0 - abs(actual - expected) / (size - 1)


def read_label(output: Any, field: str | None) -> str | None:
    """The label the output gives: the text itself, or ``field`` of its JSON object (None if absent)."""
    if field is None:
        return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    parsed, document, _ = parse_json_output(output)
    if not parsed or not isinstance(document, Mapping) or document.get(field) is None:
        return None
    label = document[field]
    return label if isinstance(label, str) else json.dumps(label, ensure_ascii=False)


def _check(value: Any, config: Mapping[str, Any]) -> str | None:
    """What the shapes cannot say: the scale's labels are distinct and the (rendered) value is one."""
    scale = scale_of(config)
    return scale if isinstance(scale, str) else _off_scale(value, scale)


_LABEL: dict[str, Any] = {"anyOf": [NONBLANK_TEXT, {"type": "number"}]}
_CONFIG: dict[str, Any] = {
    "scale": {
        "type": "array",
        "minItems": 2,
        "items": _LABEL,
        "description": "The labels in order, lowest first (required).",
    },
    "field": {
        "type": "string",
        "minLength": 1,
        "description": "Read the label from this field of the output's JSON object.",
    },
}


def _off_scale(value: Any, scale: Sequence[str]) -> str | None:
    if label_key(value) not in [label_key(label) for label in scale]:
        return f"expected label {value!r} is not on the scale {_show(scale)}"
    return None


@assertion(
    _NAME,
    family="ordinal",
    description="Distance of the output's label from the expected one on config.scale: 1 - |i - j| / (n - 1)",
    default_threshold=1.0,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema={**_LABEL, "description": "The expected label, one of config.scale."},
    config_schema=_CONFIG,
    check=_check,
)
def ordinal_distance(ctx: AssertionContext) -> AssertionResult | Measurement:
    scale = scale_of(ctx.config)
    assert not isinstance(scale, str), "validate checked config.scale"
    keys = [label_key(label) for label in scale]
    field = ctx.config.get("field")
    raw = read_label(ctx.output, str(field) if field else None)
    if raw is None:
        return AssertionResult.failure(
            f"the output has no JSON field {field!r} (config.field) to read a label from"
        )
    if label_key(raw) not in keys:
        shown = raw if len(raw) <= 60 else raw[:60] + "..."
        return AssertionResult.failure(f"output label {shown!r} is not on the scale {_show(scale)}")
    actual, expected = keys.index(label_key(raw)), keys.index(label_key(ctx.value))
    score = ordinal_score(actual, expected, len(scale))
    steps = abs(actual - expected)
    subject = (
        f"Label {scale[actual]!r} is {steps} {'step' if steps == 1 else 'steps'} from expected "
        f"{scale[expected]!r} on {_show(scale)}: score {score:.4g}"
    )
    details = {"label": scale[actual], "expected": scale[expected], "distance": steps, "scale": list(scale)}
    return Measurement(value=score, subject=subject, details=details)
