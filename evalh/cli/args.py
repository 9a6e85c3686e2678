"""promptfoo's command-line habits, turned into evalh's before click parses them.

``-o a.json b.html`` (several paths after one ``-o``, promptfoo's form) becomes ``-o a.json -o
b.html``; without this click took ``b.html`` as the config. A word after the ``-o`` paths counts as
another path when it ends in a report extension, unless it is the config: an existing ``.yaml`` /
``.yml`` / ``.json`` file while no config was named yet. promptfoo flags evalh does not have get a
message saying so (exit 2), not a did-you-mean to an unrelated flag.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import typer.core
from typer._click.core import Context, Parameter
from typer._click.exceptions import UsageError

try:
    from evalh.cli.convert import convert_lazily
except ImportError:  # typer < 0.29: none of the per-option adapters (nor the internals) it avoids

    def convert_lazily(params: list[Parameter]) -> list[Parameter]:
        return params


__all__ = ["UNSUPPORTED_FLAGS", "EvalhGroup", "PromptfooCommand", "promptfoo_args"]

REPORT_SUFFIXES = (".json", ".jsonl", ".xml", ".csv", ".yaml", ".yml", ".html", ".txt", ".md")
_CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
_MULTI = ("-o", "--output", "-c", "--config")

# promptfoo flags evalh has no counterpart for, and what to do instead.
UNSUPPORTED_FLAGS = {
    "--share": "evalh does not upload results; write a report with -o results.html",
    "--no-share": "evalh never shares results, so there is nothing to turn off; drop the flag",
    "--watch": "evalh has no watch mode; re-run evalh run (e.g. from your editor or entr)",
    "-w": "evalh has no watch mode; re-run evalh run (e.g. from your editor or entr)",
    "--resume": "evalh does not resume a stopped run; re-run what is missing with --filter-failing "
    "REPORT.json (the rows a stopped run finished are in its reports and its run store)",
    "--remote": "evalh grades locally; there is no remote generation",
    "--prompts": "evalh reads prompts from the config only; add them under prompts:",
    "-p": "evalh reads prompts from the config only; add them under prompts:",
    "--providers": "evalh reads providers from the config only; add them under providers:",
    "-r": "evalh reads providers from the config only; add them under providers:",
    "--tests": "evalh reads tests from the config only; write tests: file://tests.csv",
    "-t": "evalh reads tests from the config only; write tests: file://tests.csv",
    "--vars": "use tests: file://vars.csv in the config, or --var name=value",
    "--assertions": "evalh reads assertions from the config only; add them under tests: or defaultTest:",
    "-a": "evalh reads assertions from the config only; add them under tests: or defaultTest:",
    "--model-outputs": "give each test its recorded answer as output: in the config",
    "--prompt-prefix": "write defaultTest: {options: {prefix: ...}} in the config, or put it in the prompt",
    "--prompt-suffix": "write defaultTest: {options: {suffix: ...}} in the config, or put it in the prompt",
    "--suggest-prompts": "evalh does not generate prompts",
    "--extension": "evalh has no extension hooks",
    "-x": "evalh has no extension hooks",
    "--interactive-providers": "promptfoo removed it too; drop the flag",
    "--filter-range": "use -n/--filter-first-n, or --filter-pattern on descriptions",
}


def _refuse_unsupported(args: Sequence[str]) -> None:
    for arg in args:
        if arg == "--":
            return
        flag = arg.split("=", 1)[0]
        if flag in UNSUPPORTED_FLAGS:
            raise UsageError(f"evalh does not support promptfoo's {flag}: {UNSUPPORTED_FLAGS[flag]}.")


def promptfoo_args(args: Sequence[str], value_options: Iterable[str]) -> list[str]:
    """``args`` with ``-o a b`` / ``-c a b`` spelled ``-o a -o b`` (``value_options``: the options
    that take a value, so their values are not mistaken for the positional config)."""
    takes_value = set(value_options)
    config_named = any(arg in ("-c", "--config") or arg.startswith("--config=") for arg in args)
    out: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        out.append(arg)
        index += 1
        if arg == "--":
            out.extend(args[index:])
            break
        if arg in takes_value and index < len(args):
            out.append(args[index])
            index += 1
            if arg in _MULTI:
                index = _more_values(args, index, arg, out, config_named)
        elif not arg.startswith("-"):
            config_named = True  # the positional config
    return out


def _more_values(args: Sequence[str], index: int, flag: str, out: list[str], config_named: bool) -> int:
    while index < len(args) and not args[index].startswith("-"):
        word = args[index]
        suffix = Path(word).suffix.lower()
        if flag in ("-c", "--config"):
            if suffix not in _CONFIG_SUFFIXES:
                break
        elif suffix not in REPORT_SUFFIXES or (
            not config_named and suffix in _CONFIG_SUFFIXES and Path(word).is_file()
        ):
            break  # the config, or something that is no report path
        out.extend([flag, word])
        index += 1
    return index


class PromptfooCommand(typer.core.TyperCommand):
    """A Typer command that reads promptfoo's habits (see the module docstring) first, and converts
    its values without pydantic where typer's own checks suffice (evalh.cli.convert)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        _refuse_unsupported(args)
        value_options = [
            name
            for param in self.params
            if param.param_type_name == "option"
            and not getattr(param, "is_flag", False)
            and not getattr(param, "count", False)
            for name in param.opts
        ]
        return super().parse_args(ctx, promptfoo_args(args, value_options))

    def get_params(self, ctx: Context) -> list[Parameter]:
        return convert_lazily(super().get_params(ctx))


class EvalhGroup(typer.core.TyperGroup):
    """evalh's command group: its own options (``--version``) converted without pydantic too."""

    def get_params(self, ctx: Context) -> list[Parameter]:
        return convert_lazily(super().get_params(ctx))
