"""A test's (or defaultTest's) ``provider:``: the provider that answers the test in place of the provider
under test and is handed it (promptfoo's test-level provider). evalh takes ``promptfoo:simulated-user``
there, its config checked at load: ``maxTurns`` a whole number, ``instructions`` a template,
``initialMessages`` ``{role, content}`` messages (inline, a JSON array, or a ``file://`` JSON/YAML list,
read here), ``stateful`` a boolean, and ``userProvider`` a provider (parsed and checked here). A test
whose simulated user has no model to play the user (no ``userProvider``, no grader) is a located error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from evalh.config.files import LoadContext, Origin, is_file_ref
from evalh.config.locate import JsonPath, format_path
from evalh.config.providers import check_provider_id, parse_spec
from evalh.errors import ConfigError, Where, then
from evalh.model import ProviderChoice, ProviderSpec, TestCase
from evalh.providers.registry import capabilities_of
from evalh.providers.simulated_user import SIMULATED_USER_ID, is_message, user_model_of
from evalh.templating import referenced_names

__all__ = ["check_user_models", "stand_in_of"]


def stand_in_of(
    data: Mapping[str, Any],
    shown: JsonPath,
    origin: Origin,
    default: tuple[Mapping[str, Any], Origin | None],
    ctx: LoadContext,
) -> ProviderSpec | None:
    """The test's ``provider:`` (else defaultTest's), parsed and checked; None when neither sets one.
    Raises ConfigError at the key that is wrong."""
    default_data, default_origin = default
    if "provider" in data or default_origin is None:
        if data.get("provider") is None:
            return None
        value, path = data["provider"], format_path((*shown, "provider"))
        where: Where = ctx.where(origin, ("provider",), (*shown, "provider"))
    else:
        if default_data.get("provider") is None:
            return None
        value, path = default_data["provider"], "defaultTest.provider"
        where = ctx.where(default_origin, ("provider",), ("defaultTest", "provider"))
    spec = parse_spec(value, path, str(ctx.base_dir), where)
    if spec.id != SIMULATED_USER_ID:
        raise ConfigError(
            f"a test's provider: runs the test in place of the provider under test; evalh takes only "
            f"{SIMULATED_USER_ID} there (got {spec.id!r})",
            where=where,
            hint="List the providers to test under providers:, and graders under options.provider",
        )
    spec = replace(spec, config=_checked_config(spec.config, then(where, ".config"), ctx))
    ctx.where_of[id(spec)] = where
    return spec


def _checked_config(config: Mapping[str, Any], where: Where, ctx: LoadContext) -> dict[str, Any]:
    checked = dict(config)
    turns = config.get("maxTurns")
    if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int) or turns < 0):
        raise ConfigError(
            f"maxTurns must be a whole number of at least 0 (got {turns!r})",
            where=then(where, ".maxTurns"),
            hint="Leave it out for 10 turns",
        )
    for key, kind, shape in (("instructions", str, "a string"), ("stateful", bool, "true or false")):
        if config.get(key) is not None and not isinstance(config[key], kind):
            raise ConfigError(f"{key} must be {shape}", where=then(where, f".{key}"))
    if isinstance(config.get("instructions"), str):  # a template: its syntax is checked now
        referenced_names(config["instructions"], where=then(where, ".instructions"))
    if config.get("initialMessages") is not None:
        checked["initialMessages"] = _initial_messages(
            config["initialMessages"], then(where, ".initialMessages"), ctx
        )
    if config.get("userProvider") is not None:
        checked["userProvider"] = _user_provider(config["userProvider"], then(where, ".userProvider"), ctx)
    return checked


def _initial_messages(value: Any, where: Where, ctx: LoadContext) -> Any:
    """The messages as a list (a ``file://`` list read now); a JSON array string is left to the
    provider, as promptfoo reads it when the test runs."""
    if is_file_ref(value):
        value = ctx.read_document(ctx.expand(value, where)[0], where).data
    elif isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise ConfigError(
            "initialMessages must be a list of {role, content} messages, or a file:// JSON/YAML list",
            where=where,
        )
    for index, item in enumerate(value):
        if not is_message(item):
            raise ConfigError(
                "a message must be {role: user | assistant | system, content: text}",
                where=then(where, f"[{index}]"),
            )
        for key in ("role", "content"):
            referenced_names(item[key], where=then(where, f"[{index}].{key}"))
    return value


def _user_provider(value: Any, where: Where, ctx: LoadContext) -> ProviderSpec:
    spec = parse_spec(value, str(where), str(ctx.base_dir), where)
    if check_provider_id(spec, where, ctx) and "text" not in capabilities_of(spec.id):
        raise ConfigError(
            f"userProvider {spec.id!r} cannot write text", where=where, hint="Name a chat or completion model"
        )
    return spec


def check_user_models(tests: Iterable[TestCase], grader: ProviderChoice | None, ctx: LoadContext) -> None:
    """Every simulated user has a model to play the user: its ``userProvider``, the test's
    ``options.provider`` or ``--grader``. promptfoo asks its hosted service; evalh is offline."""
    for test in tests:  # a defaultTest's is reported once: Problems drops a repeated message
        spec = test.stand_in
        if spec is None or user_model_of(spec, test, grader) is not None:
            continue
        ctx.problems.add(
            f"{SIMULATED_USER_ID} needs a model to play the user (evalh does not call promptfoo's "
            "hosted service)",
            where=ctx.where_of.get(id(spec), spec.path),
            hint="Set config.userProvider (e.g. openai:chat:gpt-4o-mini), or a grader: "
            "defaultTest.options.provider or --grader",
        )
