"""``evalh validate``: check a config as run would load it, without calling any provider."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from evalh.cli.output import echo, warning
from evalh.cli.params import ConfigArg, ConfigOption, EnvFileOption, StrictOption, config_paths, parse_vars

if TYPE_CHECKING:
    from evalh.model import Suite

__all__ = ["validate"]


def validate(
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    grader: Annotated[str | None, typer.Option("--grader", help="Grader provider id, as for run.")] = None,
    var: Annotated[
        list[str] | None, typer.Option("--var", help="Set a variable for every test: key=value.")
    ] = None,
    filter_pattern: Annotated[
        str | None, typer.Option("--filter-pattern", help="Only tests whose description matches this regex.")
    ] = None,
    env_file: EnvFileOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks of bugs.")] = False,
    strict: StrictOption = False,
) -> None:
    """Check a config against the schema and every assertion's rules, without calling any provider.

    .env (or each --env-file) is loaded as run loads it. Every problem is reported in one pass.
    Warnings (an undefined variable, an unknown key) are printed and still valid, unless --strict.
    Exit codes: 0 valid; 2 invalid (each problem is printed with file:line:column and its path).
    """
    from evalh.config.dotenv import dotenv_environment, environment_overlay
    from evalh.session.context import run_context

    with run_context(), dotenv_environment(env_file or []):
        from evalh.config.load import load_suite
        from evalh.config.schema_comment import check_schema_comment
        from evalh.runner.cache import warn_latency_with_cache
        from evalh.runner.credentials import keyless_providers, missing_keys_error
        from evalh.runner.filters import filter_by_description

        paths = config_paths(config, config_option)
        for path in paths:
            check_schema_comment(path)
        checks = (  # outputPath as run would check it, and the filter: reported with the rest
            lambda loaded, _where: _check_report_paths(loaded),
            lambda loaded, _where: filter_by_description(loaded, filter_pattern),
        )
        suite = load_suite(
            paths, grader=grader, cli_vars=parse_vars(var or []), checks=checks, report_config=False
        )
        suite = filter_by_description(suite, filter_pattern)
        with environment_overlay(suite.env):  # as run sees it
            keyless = keyless_providers(suite)
            warn_latency_with_cache(suite)  # EVALH_CACHE_ENABLED may come from the config's env:
        if keyless:  # secrets are the environment's, not the config's: never an error here, even --strict
            warning(missing_keys_error(keyless, where=suite.config_path, validating=True).render())
        count = sum(len(test.asserts) for test in suite.tests)
        shown = " + ".join(str(path) for path in paths)
        echo(
            f"{shown}: valid ({len(suite.tests)} tests, {count} assertions, "
            f"{max(1, len(suite.prompts))} prompts, {max(1, len(suite.providers))} providers)"
        )


def _check_report_paths(suite: Suite) -> None:
    """outputPath as run checks it. The report writers (and rich, which the Markdown report draws with)
    are imported only when the config names a report: most configs do not, and validate of a large
    suite spent about 0.1 s importing them."""
    if suite.output_paths:
        from evalh.reports.writers import check_report_paths

        check_report_paths(suite.output_paths, suite.input_files)
