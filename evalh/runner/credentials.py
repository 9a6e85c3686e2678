"""API keys missing before the first provider call.

Every provider a run would call (each provider under test, and each assertion's grader and embedder, as
:func:`~evalh.assertions.base.needed_providers` picks them for validate's grader check) is asked whether
it has its key, by its family's own rule (:func:`evalh.providers.registry.missing_key`: ``config.apiKey``,
``config.apiKeyEnvar``, the environment with .env / --env-file and the config's ``env:`` applied). ``evalh
run`` says so in one paragraph before the first call, and the rows that need such a provider are ERRORs
(without a call), as in promptfoo, so the other rows still run and report; under ``--strict`` the paragraph
is an error (exit 2) and nothing runs. ``evalh validate`` only warns, so a lint job without secrets passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from evalh.assertions.base import needed_providers
from evalh.assertions.registry import get_assertion
from evalh.errors import ConfigError
from evalh.model import RECORDED_PROVIDER_ID, AssertionSpec, ProviderSpec, Suite, TestCase
from evalh.providers.keys import MissingKey
from evalh.providers.registry import missing_key
from evalh.providers.simulated_user import user_model_of
from evalh.runner.plan import Job

__all__ = ["Keyless", "keyless_providers", "missing_keys_error"]

_PLACES_SHOWN = 3  # places named per provider; the rest are counted
_ROLES = {"text": "grader", "embedding": "embedder", "tokens": "embedder"}


@dataclass(frozen=True)
class Keyless:
    """One provider (by id and the variables it wants) without its key, and the places it is used."""

    provider: str
    missing: MissingKey
    places: tuple[str, ...]

    def describe(self) -> str:
        shown = ", ".join(self.places[:_PLACES_SHOWN])
        more = len(self.places) - _PLACES_SHOWN
        where = f"{shown} and {more} more place{'s' if more > 1 else ''}" if more > 0 else shown
        instead = f" ({self.missing.instead})" if self.missing.instead else ""
        return f"{self.provider} ({where}) needs {' or '.join(self.missing.envars)}{instead}"


def keyless_providers(suite: Suite, jobs: Sequence[Job] | None = None) -> list[Keyless]:
    """The providers ``jobs`` (default: every test of ``suite``) would call that lack their API key, in
    the order they are first used; call it with the run's environment in place."""
    found: dict[tuple[str, MissingKey], list[str]] = {}
    asked: dict[int, MissingKey | None] = {}  # one ask per spec object (a --grader serves every test)
    for spec, place in _providers_in_use(suite, jobs):
        if id(spec) not in asked:
            asked[id(spec)] = missing_key(spec)
        missing = asked[id(spec)]
        if missing is not None:
            places = found.setdefault((spec.id, missing), [])
            if place not in places:
                places.append(place)
    return [Keyless(provider, missing, tuple(places)) for (provider, missing), places in found.items()]


def missing_keys_error(
    keyless: Sequence[Keyless], *, where: str | None = None, validating: bool = False
) -> ConfigError:
    """One paragraph naming every provider without its key and the variables that would give it one
    (``validating``: worded as validate's warning about what run would do)."""
    count = len(keyless)
    listing = "; ".join(item.describe() for item in keyless)
    fix = (
        "Set the variable (export it, or write it in .env or a file given with --env-file), or give the "
        "provider config.apiKey (config.apiKeyEnvar names another variable)"
    )
    then = (
        "`evalh run` makes the rows that need them ERRORs (with --strict it stops, exit 2, before any "
        "call); validate only warns, so a lint job without secrets passes"
        if validating
        else f"The rows that need {'them' if count > 1 else 'it'} are ERRORs; --strict stops the run here "
        "instead (exit 2)"
    )
    return ConfigError(
        f"{count} provider{'s' if count > 1 else ''} in use ha{'ve' if count > 1 else 's'} no API key, "
        f"so every call to {'them' if count > 1 else 'it'} fails: {listing}",
        where=where,
        hint=f"{fix}. {then}",
    )


def _providers_in_use(suite: Suite, jobs: Sequence[Job] | None) -> Iterator[tuple[ProviderSpec, str]]:
    """(provider, where it is written) for each use: the providers under test, then the assertions'."""
    if jobs is None:
        calls = any(not test.has_output for test in suite.tests)
        under_test = [spec for spec in suite.providers if calls and spec.id != RECORDED_PROVIDER_ID]
        tests: Iterable[TestCase] = suite.tests
    else:
        under_test = list({id(job.provider): job.provider for job in jobs if job.uses_provider}.values())
        tests = {id(job.test): job.test for job in jobs}.values()
    for spec in under_test:
        yield spec, spec.path or "providers"
    needs_of: dict[
        str, tuple[str, ...]
    ] = {}  # an assertion type's needs, by type: 30,000 assertions, few types
    for test in tests:
        stand_in = test.stand_in
        user = user_model_of(stand_in, test, suite.default_provider) if stand_in is not None else None
        if stand_in is not None and user is not None and not test.has_output:
            yield user, f"user model of {stand_in.path or 'the simulated user'}"  # it plays the user
        for assertion in _flattened(test.asserts):
            needs = needs_of.get(assertion.base_type)
            if needs is None:
                definition = get_assertion(assertion.base_type)
                needs = needs_of[assertion.base_type] = definition.needs if definition is not None else ()
            for need in needs:
                for provider in needed_providers(assertion, test, need, suite.default_provider):
                    yield provider, f"{_ROLES.get(need, need)} at {provider.path or assertion.path}"


def _flattened(asserts: Sequence[AssertionSpec]) -> Sequence[AssertionSpec]:
    """The assertions and, after each, its children's (most have none: the list itself is returned)."""
    if not any(spec.children for spec in asserts):
        return asserts
    flat: list[AssertionSpec] = []
    for spec in asserts:
        flat.append(spec)
        flat.extend(_flattened(spec.children))
    return flat
