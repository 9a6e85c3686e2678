"""A test with a recorded ``output`` in a suite that has providers: the recorded output is graded and
the providers are never called for it (promptfoo's rule). ``evalh init``'s starter invites adding
providers to such tests, so evalh says so (a warning, an error under --strict) instead of letting a
"live" run silently grade the recorded answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalh.common.notices import is_strict, warn
from evalh.config.files import LoadContext, Origin
from evalh.errors import ConfigError
from evalh.model import ProviderSpec, TestCase

__all__ = ["check_recorded_outputs"]

_LIST_LIMIT = 5


def check_recorded_outputs(
    tests: Sequence[TestCase],
    providers: Sequence[ProviderSpec],
    origins: Mapping[int, Origin],
    ctx: LoadContext,
) -> None:
    """One located warning for the tests whose recorded output shadows the suite's providers."""
    recorded = [test for test in tests if test.has_output]
    if not providers or not recorded:
        return
    places = [origins[test.index].locate(("output",)) for test in recorded]
    shown = ", ".join(places[:_LIST_LIMIT]) + (
        f" and {len(places) - _LIST_LIMIT} more" if len(places) > _LIST_LIMIT else ""
    )
    names = ", ".join(provider.id for provider in providers[:_LIST_LIMIT])
    message = (
        f"{len(recorded)} test(s) have a recorded output ({shown}): it is graded as written and the "
        f"providers ({names}) are not called for those tests"
    )
    hint = "Remove output: from the tests that should call the providers (or remove the providers)"
    if is_strict():
        ctx.problems.add(message, where=places[0], hint=hint)
    else:
        warn(ConfigError(message, where=places[0], hint=hint), where=places[0], subject="recorded output")
