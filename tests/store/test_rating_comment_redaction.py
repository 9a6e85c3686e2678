"""What docs/review.md promises of a rating's comment: redacted of the secret values evalh knows (the
environment's secret-named variables, URL credentials), stored as typed otherwise, a key-shaped string
evalh does not know included (it cannot tell one from text)."""

from __future__ import annotations

import pytest

from evalh.store.ratings import Rating


def test_a_comment_loses_the_secrets_evalh_knows_and_keeps_what_it_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REVIEW_API_KEY", "sk-live-abcdef123456")
    unknown = "sk-proj-notInThisEnvironment0123456789"
    comment = f"leaked sk-live-abcdef123456 via https://bob:hunter2pass@example.com/x, also {unknown}"
    stored = Rating.of("row", passed=False, score=None, comment=comment, reviewer="ana").comment
    assert "sk-live-abcdef123456" not in stored and "hunter2pass" not in stored
    assert "https://bob:[REDACTED]@example.com/x" in stored
    assert unknown in stored
