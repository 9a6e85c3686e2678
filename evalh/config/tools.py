"""A chat provider's (or a prompt's) tool settings at load: ``file://`` tools read once, and each offered
function's ``parameters`` checked as a JSON Schema, so a broken schema is a located config error
before the first call rather than an ERROR on every row that grades it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.config.files import LoadContext, is_file_ref
from evalh.errors import ConfigError, Where, then
from evalh.providers.tools import TOOL_KEYS
from evalh.templating import has_template, template_strings

__all__ = ["load_tool_files"]


def load_tool_files(config: Mapping[str, Any], where: Where, ctx: LoadContext) -> dict[str, Any]:
    """``config`` with each ``file://`` tool setting (``tools: file://tools.yaml``, or a list of such
    files, flattened as promptfoo does) replaced by the file's data, read once relative to the
    config; the provider renders the data with each test's vars. Raises ConfigError (located)."""
    loaded = dict(config)
    for key in TOOL_KEYS:
        value = config.get(key)
        place = then(where, f".{key}")
        if is_file_ref(value):
            loaded[key] = _tool_file(value, place, ctx)
        elif isinstance(value, list) and any(is_file_ref(item) for item in value):
            items = [
                _tool_file(item, then(place, f"[{i}]"), ctx) if is_file_ref(item) else item
                for i, item in enumerate(value)
            ]
            flat = all(isinstance(item, list) for item in items)
            loaded[key] = [tool for item in items for tool in item] if flat else items
    for key in ("tools", "functions"):
        _check_schemas(loaded.get(key), then(where, f".{key}"))
    return loaded


def _tool_file(ref: str, where: Where, ctx: LoadContext) -> Any:
    if "{{" in ref or "{%" in ref:
        raise ConfigError(
            f"the tools file path {ref!r} holds a template; evalh reads tool files once, at load",
            where=where,
            hint="Name the file itself (file://tools.yaml); its tool definitions may use {{ vars }}",
        )
    return ctx.load_value(ref, where, trim=False)


def _check_schemas(tools: Any, where: Where) -> None:
    """Each function's ``parameters`` (OpenAI's tools and functions) or ``input_schema`` (Anthropic's)
    must be a JSON Schema; one holding a template is checked per call instead, once rendered."""
    if not isinstance(tools, list):
        return
    for index, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        for field in ("parameters", "input_schema"):
            schema = function.get(field)
            if schema is None or any(has_template(text) for text in template_strings(schema)):
                continue
            from evalh.assertions.structured import schema_problem  # a family: imported when used

            problem = schema_problem(schema) if isinstance(schema, Mapping) else "the value must be an object"
            if problem:
                inner = ".function" if function is not tool else ""
                raise ConfigError(
                    f"tool {function.get('name')!r}, {field}: {problem}",
                    where=then(where, f"[{index}]{inner}.{field}"),
                    hint="Write the tool's arguments as a JSON Schema object, e.g. "
                    "{type: object, properties: {city: {type: string}}, required: [city]}",
                )
