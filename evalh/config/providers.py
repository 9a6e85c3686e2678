"""``providers:`` / ``targets:`` and provider choices (``options.provider``, an assertion's ``provider``).

The one parser of provider references. Accepted forms, as in promptfoo: an id string,
``{id, label, config}``, the one-key map ``{<id>: {label, config}}``, a ``file://providers.yaml`` list;
choices (an assertion's ``provider``, ``options.provider``, ``--grader``) may also be the typed map
``{embedding: ..., text: ...}`` or a list of providers that each score (``provider: [a, b]``, or an
embedding assertion's ``config.providers``). Everything is parsed here, once, at load. Ids are checked
against the provider registry (did you mean ...?), and a ``python:`` / ``file://`` provider's script
must exist (a JavaScript one must also compile and require nothing the sandbox refuses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalh.common.notices import warn
from evalh.config.files import FILE_PREFIX, LoadContext, is_file_ref, script_path
from evalh.config.locate import Document, JsonPath, close_matches, format_path, path_errors
from evalh.config.shapes import defs_checker
from evalh.config.tools import load_tool_files
from evalh.errors import ConfigError, SchemaError, Where, then
from evalh.model import ProviderChoice, ProviderSpec
from evalh.providers.javascript import javascript_provider_problem, self_named
from evalh.providers.registry import PROVIDERS, find_entry, is_javascript_provider, unserved, unserved_error
from evalh.runtimes.javascript_source import split_js_target
from evalh.runtimes.transforms import transform_problem

__all__ = [
    "check_choice",
    "check_provider_id",
    "load_providers",
    "parse_choice",
    "parse_models",
    "parse_spec",
    "unknown_provider",
]

_SCRIPT_PREFIXES = ("python:", FILE_PREFIX)
# Keys of a provider object or typed map: never the id of the one-key form ``{<id>: {label, config}}``.
_RESERVED = frozenset({"id", "label", "config", "embedding", "text"})


def _shown(value: Any) -> str:
    # An object is shown by its keys only: its config may hold an API key.
    return f"an object with keys {sorted(map(str, value))}" if isinstance(value, Mapping) else repr(value)


def parse_spec(value: Any, path: str, base_dir: str = "", where: Where | None = None) -> ProviderSpec:
    """A provider written as an id, ``{id, label, config}`` or ``{<id>: {label, config}}``.

    ``path`` is its JSON path (kept for messages), ``base_dir`` (the config's directory) is where the
    provider resolves script paths. Raises ConfigError at ``where`` (default: ``path``) for any other
    shape: a list in an assertion's ``config`` is not schema-checked."""
    if isinstance(value, str) and value:
        return ProviderSpec(id=value, path=path, base_dir=base_dir)
    if isinstance(value, Mapping) and "id" in value:
        options, provider_id = value, value["id"]
    elif isinstance(value, Mapping) and len(value) == 1 and not _RESERVED.intersection(value):
        (provider_id, options), *_ = value.items()
        options = options or {}
    else:
        options, provider_id = {}, None
    if not isinstance(options, Mapping):
        options, provider_id = {}, None
    config, label = options.get("config"), options.get("label")
    if not isinstance(provider_id, str) or not provider_id or not isinstance(config, Mapping | None):
        raise ConfigError(
            f"a provider must be an id or an {{id, label, config}} object (got {_shown(value)})",
            where=where or path,
            hint="Write the provider as local, or as {id: openai:embedding:<model>, config: {...}}",
        )
    prompts = options.get("prompts")
    transform = options.get("transform")
    return ProviderSpec(
        id=provider_id,
        label=str(label) if label else None,
        config=dict(config or {}),
        path=path,
        base_dir=base_dir,
        prompts=tuple(str(ref) for ref in prompts) if isinstance(prompts, list) else None,
        transform=transform if isinstance(transform, str) else None,
    )


def parse_models(
    value: Any, path: str, base_dir: str = "", where: Where | None = None
) -> tuple[ProviderSpec, ...]:
    """A list of providers that each score (``provider: [a, b]`` or ``config.providers``); an entry may
    also be the typed map ``{embedding: ...}``. Raises ConfigError at the list or the bad entry."""
    where = where or path
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(
            f"a provider list must be a non-empty list of provider ids or {{id, config}} objects "
            f"(got {_shown(value)})",
            where=where,
        )
    models = []
    for index, item in enumerate(value):
        suffix = f"[{index}]"
        if isinstance(item, Mapping) and "embedding" in item and "id" not in item:
            item, suffix = item["embedding"], f"{suffix}.embedding"
        models.append(parse_spec(item, path + suffix, base_dir, then(where, suffix)))
    return tuple(models)


def parse_choice(value: Any, path: str, base_dir: str = "", where: Where | None = None) -> ProviderChoice:
    """A grader/embedder override: one provider for every purpose, ``{embedding:, text:}``, or a list of
    providers that each score (embedding assertions report their mean)."""
    where = where or path
    if isinstance(value, list | tuple):
        return ProviderChoice(models=parse_models(value, path, base_dir, where))
    if isinstance(value, Mapping) and "id" not in value and ("embedding" in value or "text" in value):
        kinds = {
            kind: parse_spec(value[kind], f"{path}.{kind}", base_dir, then(where, f".{kind}"))
            for kind in ("embedding", "text")
            if value.get(kind) is not None
        }
        return ProviderChoice(embedding=kinds.get("embedding"), text=kinds.get("text"))
    return ProviderChoice(default=parse_spec(value, path, base_dir, where))


def unknown_provider(provider_id: str, where: Where) -> ConfigError:
    """The error for an id the registry does not serve: why and what instead for an id promptfoo
    documents, the missing model of a family named alone, else a did-you-mean."""
    refused = unserved(provider_id)
    if refused is not None:
        return unserved_error(refused, provider_id, where)
    family = next(
        (e for e in PROVIDERS if e.is_prefix and e.pattern in (provider_id, provider_id + ":")), None
    )
    if family is not None:
        return ConfigError(
            f"provider id {provider_id!r} names no model", where=where, hint=f"Write it as {family.example}"
        )
    suggestion = None
    if ":" in provider_id:  # a misspelt family: opneai:gpt-4o -> openai:gpt-4o
        prefix, _, rest = provider_id.partition(":")
        prefixes = sorted({entry.pattern for entry in PROVIDERS if entry.pattern.endswith(":")})
        close = close_matches(prefix + ":", prefixes)
        suggestion = f"{close}{rest}" if close else None
    suggestion = suggestion or close_matches(provider_id, [entry.example for entry in PROVIDERS])
    hint = (
        f"Did you mean {suggestion!r}?"
        if suggestion
        else "Run `evalh list providers` for the ids evalh knows"
    )
    return ConfigError(f"unknown provider id {provider_id!r}", where=where, hint=hint)


def check_provider_id(spec: ProviderSpec, where: Where, ctx: LoadContext) -> bool:
    """Report an unknown id, a bad setting, a missing provider script or a missing ``file://`` in its
    options; True when the provider is usable."""
    if find_entry(spec.id) is None:
        ctx.problems.add_exception(unknown_provider(spec.id, where))
        return False
    if not _settings_ok(spec, where, ctx):
        return False
    base = Path(spec.base_dir) if spec.base_dir else ctx.base_dir
    if is_javascript_provider(spec.id):
        if not _file_exists(split_js_target(spec.id)[0], base, where, ctx):
            return False
        problem = javascript_provider_problem(replace(spec, base_dir=str(base)))
        if problem is not None:
            ctx.problems.add(problem.message, where=where, hint=problem.hint)
            return False
    elif spec.id.startswith(_SCRIPT_PREFIXES):
        target = script_path(spec.id.removeprefix("python:")).removeprefix(FILE_PREFIX)
        if not _file_exists(target, base, where, ctx):
            return False
    return _config_files_exist(spec.config, then(where, ".config"), base, ctx)


def _file_exists(target: str, base: Path, where: Where, ctx: LoadContext) -> bool:
    """Whether ``target`` (relative to ``base``) is a file; a located problem when it is not."""
    try:
        with path_errors(target, where):
            path = (base / Path(target).expanduser()).resolve()
            found = path.is_file()
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return False
    if not found:
        ctx.problems.add_exception(ctx.missing(path, where))
    return found


def _config_files_exist(value: Any, where: Where, base: Path, ctx: LoadContext) -> bool:
    """Every ``file://`` path in a provider's options names an existing file (a path holding a
    template is left to the provider, which renders it)."""
    if isinstance(value, Mapping):
        return all(
            [_config_files_exist(item, then(where, f".{key}"), base, ctx) for key, item in value.items()]
        )
    if isinstance(value, list):
        return all(
            [_config_files_exist(item, then(where, f"[{i}]"), base, ctx) for i, item in enumerate(value)]
        )
    if is_file_ref(value) and "{{" not in value and "{%" not in value:
        return _file_exists(script_path(value).removeprefix(FILE_PREFIX), base, where, ctx)
    return True


# Settings many providers read from ``config`` (the HTTP layer, exec:, the runner): (kind, minimum).
_SETTINGS = {
    "maxConcurrency": ("whole number", 1),
    "maxRetries": ("number", 0),
    "timeoutMs": ("number", 0),
    "timeout": ("number", 0),
}


def _settings_ok(spec: ProviderSpec, where: Where, ctx: LoadContext) -> bool:
    """Each setting of ``_SETTINGS`` present in the config has its type and minimum (a numeric string
    counts as its number, as the HTTP layer reads it); found at load time rather than at the first call."""
    ok = True
    for key, (kind, minimum) in _SETTINGS.items():
        value = spec.config.get(key)
        if value is None or _is_setting(value, kind, minimum):
            continue
        ctx.problems.add(
            f"config.{key} must be a {kind} of at least {minimum} (got {value!r})",
            where=then(where, f".config.{key}"),
            hint="Leave it out to use the default",
        )
        ok = False
    return ok


def _is_setting(value: Any, kind: str, minimum: int) -> bool:
    if isinstance(value, bool):
        return False
    if kind == "whole number":
        return isinstance(value, int) and value >= minimum
    try:
        number = float(value) if isinstance(value, int | float | str) else math.nan
    except (ValueError, OverflowError):
        return False
    return math.isfinite(number) and number >= minimum


def check_choice(choice: ProviderChoice, where: Where, ctx: LoadContext) -> None:
    """Check every provider a choice names (``where`` locates the choice itself)."""
    named = [(where, choice.default), (then(where, ".embedding"), choice.embedding)]
    named.append((then(where, ".text"), choice.text))
    named.extend((then(where, f"[{index}]"), spec) for index, spec in enumerate(choice.models))
    for place, spec in named:
        if spec is not None:
            check_provider_id(spec, place, ctx)
            _grader_transform(spec, place)


def _grader_transform(spec: ProviderSpec, where: Where) -> None:
    """A transform on a grader or embedder is never applied (promptfoo ignores it too): say so."""
    if spec.transform is not None:
        message = "a grader's or embedder's transform is not applied (only the providers under test are)"
        hint = "Remove it; transform the output under test with options.transform or the provider's transform"
        warn(
            ConfigError(message, where=then(where, ".transform"), hint=hint), where=where, subject="transform"
        )


def _check_transform(spec: ProviderSpec, where: Where, ctx: LoadContext) -> None:
    """A provider's ``transform`` must be usable code (none of it runs here)."""
    problem = transform_problem(spec.transform, ctx.base_dir) if spec.transform is not None else None
    if problem:
        ctx.problems.add(problem, where=where)


def load_providers(value: Any, key: str, doc: Document, ctx: LoadContext) -> list[ProviderSpec]:
    """The providers (or targets) of the config, each id checked; problems go to ``ctx.problems``."""
    if isinstance(value, str) and is_file_ref(value):
        where = doc.place((key,))
        try:
            source = ctx.read_document(ctx.expand(value, where)[0], where)
        except ConfigError as error:
            ctx.problems.add_exception(error)
            return []
        entries: list[tuple[Any, JsonPath, JsonPath]]
        if isinstance(source.data, list):
            entries = [(item, (i,), (key, i)) for i, item in enumerate(source.data)]
        else:
            entries = [(source.data, (), (key,))]
        return _specs(entries, source, ctx, validate=True)
    inline: list[tuple[Any, JsonPath, JsonPath]] = (
        [(item, (key, i), (key, i)) for i, item in enumerate(value)]
        if isinstance(value, list)
        else [(value, (key,), (key,))]
    )
    return _specs(inline, doc, ctx, validate=False)


def _specs(
    entries: list[tuple[Any, JsonPath, JsonPath]], doc: Document, ctx: LoadContext, *, validate: bool
) -> list[ProviderSpec]:
    """Specs from (item, path in ``doc``, path shown in messages) entries; file items are schema-checked."""
    specs: list[ProviderSpec] = []
    checker = defs_checker("providerObject", "providerMap", allow_string=True)
    for item, doc_path, shown in entries:
        if validate:
            problems = checker.problems(item)
            for problem in problems:
                at = doc.place((*doc_path, *problem.path), (*shown, *problem.path))
                ctx.problems.add(problem.message, where=at, hint=problem.hint, kind=SchemaError)
            if problems:
                continue
        spec = parse_spec(item, format_path(shown), str(ctx.base_dir))
        where = doc.place(doc_path, shown)
        if check_provider_id(spec, where, ctx):
            try:
                spec = replace(spec, config=load_tool_files(spec.config, then(where, ".config"), ctx))
            except ConfigError as error:
                ctx.problems.add_exception(error)
                continue
            if is_javascript_provider(spec.id):  # promptfoo's reports show the id() it gives itself
                spec = self_named(replace(spec, base_dir=spec.base_dir or str(ctx.base_dir)))
            ctx.where_of[id(spec)] = where
            own = isinstance(item, Mapping) and "id" in item
            transform_at = (*doc_path, "transform") if own else (*doc_path, spec.id, "transform")
            _check_transform(spec, doc.place(transform_at, (*shown, "transform")), ctx)
            specs.append(spec)
    return specs
