"""``tracing.otlp.http.redactAttributes``: span attributes whose values never go further than the receiver.

promptfoo's rule (``src/tracing/otlpReceiver.ts``): an attribute whose key, lowercased, contains one of
the configured parts (lowercased) gets the redaction marker as its value; within the other attributes'
object values, nested keys are redacted by the same rule. A span name or status message that is exactly
one of the redacted text values (an agent naming its span after the secret) gets the marker too. It
happens as spans arrive, so assertions, the row's trace, the store and every report see only the marker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.model import Span
from evalh.secrets import MARKER

__all__ = ["AttributeRedactor"]


class AttributeRedactor:
    """Redacts the attributes named by ``parts`` (already lowercased) in spans."""

    def __init__(self, parts: Sequence[str]) -> None:
        self.parts = tuple(parts)

    def __bool__(self) -> bool:
        return bool(self.parts)

    def redacts(self, key: str) -> bool:
        lowered = key.lower()
        return any(part in lowered for part in self.parts)

    def span(self, span: Span) -> Span:
        """The span with its named attributes redacted (the span itself when nothing is named)."""
        if not self.parts:
            return span
        hidden = {v for k, v in span.attributes.items() if isinstance(v, str) and self.redacts(k)}
        attributes = {
            key: MARKER if self.redacts(key) else self._nested(value)
            for key, value in span.attributes.items()
        }
        return dataclasses.replace(
            span,
            name=MARKER if span.name in hidden else span.name,
            status_message=MARKER if span.status_message in hidden else span.status_message,
            attributes=attributes,
        )

    def _nested(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {
                key: MARKER if self.redacts(str(key)) else self._nested(item) for key, item in value.items()
            }
        if isinstance(value, list):
            return [self._nested(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self._nested(item) for item in value)
        return value
