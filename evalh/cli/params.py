"""The arguments and options several commands share (the config, ``--env-file``, ``--strict``,
``--var``), and turning them into what the library takes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.errors import ConfigError

__all__ = [
    "AlphaOption",
    "ConfigArg",
    "ConfigOption",
    "EnvFileOption",
    "FailUnderOption",
    "StrictOption",
    "config_paths",
    "parse_vars",
]

ConfigArg = Annotated[
    Path | None,
    typer.Argument(
        help="The config file (default: evalh.yaml, then promptfooconfig.yaml here).", show_default=False
    ),
]
ConfigOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--config",
        "-c",
        help="The config file (same as the argument); several (-c a.yaml b.yaml) are merged as promptfoo "
        "merges them.",
    ),
]
EnvFileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--env-file",
        "--env-path",
        help="Load KEY=VALUE lines into the environment (repeatable; later files win). Without it, "
        "./.env is loaded when present.",
    ),
]
FailUnderOption = Annotated[
    float | None,
    typer.Option("--fail-under", min=0, max=100, help="Exit 0 when the pass rate is at least PCT percent."),
]
AlphaOption = Annotated[
    float,
    typer.Option(
        "--alpha",
        min=0.0001,
        max=0.5,
        help="With repeats in both runs: the chance, over all the tests compared, of calling any unchanged "
        "test regressed or improved (one-sided Fisher's exact test per test, Holm's step-down).",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Make warnings errors (exit 2): an undefined template variable, which otherwise renders "
        "empty as in promptfoo, and an unknown config key, which is otherwise ignored. Also "
        "evaluateOptions.strict.",
    ),
]


def parse_vars(pairs: list[str]) -> dict[str, str]:
    """``--var key=value`` pairs as a mapping (values are data, never templates)."""
    parsed: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--var expects key=value, got {pair!r}", hint="Example: --var name=Ada")
        parsed[key.strip()] = value
    return parsed


def config_paths(config: Path | None, config_option: list[Path] | None) -> list[Path]:
    """The config files to load: several -c are merged (promptfoo's -c a.yaml b.yaml)."""
    from evalh.config.load import find_config

    if config_option and config is not None:
        raise ConfigError(
            "the config is named twice: as an argument and with -c",
            where=str(config),
            hint="Name it once; to merge several configs, repeat -c (-c a.yaml -c b.yaml)",
        )
    chosen = config_option or ([config] if config is not None else [])
    return chosen or [find_config()]
