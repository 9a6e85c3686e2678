"""Command-line values converted as typer converts them, without loading pydantic for every command.

typer (0.2x) converts each option's value through a pydantic ``TypeAdapter`` it builds on first use, for
every option of the command, given or not: importing pydantic and building the adapters of ``run``'s
30 options was about 0.1 s of CPU of every ``evalh run`` and ``evalh validate``. Here a text or path
option is converted by typer's own path checks directly, and any other option (a number with bounds)
gets typer's adapter only when it is given, so its checks and messages stay typer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from typer._click.core import Context, Parameter
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._param_types import coerce_cli_path
from typer.core import _TyperParameter

__all__ = ["convert_lazily"]


@dataclass(frozen=True)
class _TypersOwn(RuntimeParam):
    """typer's conversion, built when the option is given (a missing option's None needs none)."""

    descriptor: TypeDescriptor

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)


@dataclass(frozen=True)
class _TextOrPath(_TypersOwn):
    """A ``str`` or ``Path`` option, or a list of them, read from the command line's words."""

    kind: type[str] | type[Path]
    many: bool

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        items = value if isinstance(value, list | tuple) else [value]
        if not all(isinstance(item, str) for item in items):  # not the command line's (bytes, a default)
            return super()._coerce_value(value, param, ctx)
        if self.kind is Path:
            items = [
                coerce_cli_path(Path(item), self.parameter_info, path_type=Path, param=param, ctx=ctx)
                for item in items
            ]
        return list(items) if self.many else items[0]


def _runtime_param(descriptor: TypeDescriptor) -> RuntimeParam:
    annotation = descriptor.annotation
    many = descriptor.is_list
    kind = get_args(annotation)[0] if many else annotation
    plain = descriptor.file_annotation is None and descriptor.parameter_info.parser is None
    if kind in (str, Path) and plain and not descriptor.is_choice:
        return _TextOrPath(descriptor.parameter_info, annotation, descriptor, kind, many)
    return _TypersOwn(descriptor.parameter_info, annotation, descriptor)


def convert_lazily(params: list[Parameter]) -> list[Parameter]:
    """``params``, each typer parameter given a converter that loads no pydantic until a value needs
    typer's adapter (one with a converter already keeps it)."""
    for param in params:
        if isinstance(param, _TyperParameter) and param._runtime_param is None:
            param._runtime_param = _runtime_param(param.type_descriptor)
    return params
