"""The ``evalh`` command: the Typer app, every sub-command registered on it, and the one place that turns
an :class:`~evalh.errors.EvalhError` into a message and an exit code.

Each sub-command lives in its own module of evalh/cli/ (thin: flags -> run options -> a library call ->
exit code). Heavy modules (config, runner, reports) are imported inside the commands so ``evalh --help``
is fast.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
import typer.main
from typer._click.core import Command
from typer.core import TyperGroup

from evalh.cli import cache, calibrate, diff, init, merge, reference, runs, validate, view
from evalh.cli import run as run_command
from evalh.cli.args import EvalhGroup, PromptfooCommand
from evalh.cli.output import echo, warning
from evalh.common.version import __version__
from evalh.errors import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, EvalhError
from evalh.secrets import redacted_stdio

__all__ = ["LazyCommands", "app", "command_group", "main"]

EXIT_CODES_HELP = (
    "Exit codes: 0 every test passed; 1 a test failed or errored (or the pass rate is under "
    "--fail-under; with --fail-on regressions, a new failure since --baseline; for evalh diff, a new "
    "failure in B); 2 invalid config or usage (also a filter that selects no test, or a run reference "
    "that names no stored run or report); 130 interrupted "
    "(Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP): the results finished so far are still "
    "written to every report, marked interrupted."
)

app = typer.Typer(
    name="evalh",
    cls=EvalhGroup,
    help="A declarative, YAML-driven evaluator for LLM outputs, with semantic scoring offline.\n\n"
    + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_state = {"verbose": False}


def _fail(error: EvalhError) -> NoReturn:
    echo(f"evalh: error: {error.render()}", err=True)
    raise typer.Exit(error.exit_code)


@contextmanager
def _user_errors(*, strict: bool = False) -> Iterator[None]:
    """EvalhError -> its one-paragraph message and exit code; a bug -> a short note (trace with --verbose).
    Warnings go to stderr, each once (errors with ``strict``). Everything the command prints has the
    run's secret values redacted (evalh.secrets)."""
    from evalh.common.notices import warnings_to

    with redacted_stdio(), warnings_to(warning, strict=strict):
        try:
            yield
        except EvalhError as error:  # the user's to fix: its message says where and how, never a traceback
            _fail(error)
        except KeyboardInterrupt:
            typer.echo("evalh: interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:  # stdout's reader went away (`evalh runs list | head`): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush fails no more
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as error:
            if _state["verbose"]:
                import traceback  # a bug's trace: `evalh --help` and every clean run need none

                traceback.print_exc()
            echo(
                f"evalh: internal error: {type(error).__name__}: {error}. This is a bug in evalh; "
                "run again with --verbose for the traceback and report it.",
                err=True,
            )
            raise typer.Exit(EXIT_FAILED) from None


def _guarded(command: Callable[..., None]) -> Callable[..., None]:
    """A sub-command from evalh/cli/ with the user-error handling every command has; its ``--verbose``
    (tracebacks of bugs) and ``--strict`` (warnings are errors), when it has them, apply to it."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> None:
        if "verbose" in kwargs:
            _state["verbose"] = bool(kwargs["verbose"])
        with _user_errors(strict=bool(kwargs.get("strict", False))):
            command(*args, **kwargs)

    return guarded


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalh {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """evalh: evaluate LLM outputs against YAML-declared tests."""


app.command("run", cls=PromptfooCommand)(_guarded(run_command.run))
app.command("eval", cls=PromptfooCommand, help=run_command.EVAL_HELP)(_guarded(run_command.run))
app.command("validate", cls=PromptfooCommand)(_guarded(validate.validate))
app.command("schema")(_guarded(reference.schema))
app.command("list")(_guarded(reference.list_))
app.command("init")(_guarded(init.init))
cache_app = typer.Typer(help=cache.HELP, no_args_is_help=True)
cache_app.command("info")(_guarded(cache.info))
cache_app.command("clear")(_guarded(cache.clear))
app.add_typer(cache_app, name="cache")
app.command("view", help=view.HELP)(_guarded(view.view))
runs.register(app, _guarded)
app.command("diff", help=diff.HELP)(_guarded(diff.diff))
app.command("calibrate", help=calibrate.HELP)(_guarded(calibrate.calibrate))
app.command("merge", help=merge.HELP)(_guarded(merge.merge))


def _exit_now_if_stuck(code: object) -> None:
    """After a run stopped by a signal (its reports written), do not wait for a worker thread still
    inside user code or a provider call: exiting normally would join it, for as long as it takes."""
    if not isinstance(code, int) or code not in run_command.SIGNAL_EXIT.values():
        return
    main_thread = threading.main_thread()
    if any(t.is_alive() and not t.daemon and t is not main_thread for t in threading.enumerate()):
        from evalh.runtimes.processes import kill_all_groups

        kill_all_groups()  # os._exit skips atexit, where exec: programs and Python workers are killed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class LazyCommands(MutableMapping[str, Command]):
    """A group's sub-commands by name, each built from its Typer registration when first asked for.

    typer builds every command's options (type hints and signatures of ~40 functions) before it parses
    anything; a run needs only its own command's. Names are known at once, in registration order, so
    ``evalh --help`` (which asks for them all), completion and an unknown command's did-you-mean are as
    typer makes them."""

    def __init__(self, builders: dict[str, Callable[[], Command]]) -> None:
        self._builders = builders
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            self._built[name] = self._builders[name]()  # KeyError for an unknown name, as a dict
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._builders.setdefault(name, lambda: command)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._builders[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __contains__(self, name: object) -> bool:
        return name in self._builders  # Mapping's own would build the command to answer

    def __len__(self) -> int:
        return len(self._builders)

    def built(self) -> list[str]:
        """The names of the commands built so far."""
        return list(self._built)


def command_group(typer_app: typer.Typer = app) -> TyperGroup:
    """``typer_app`` as the click group typer makes of it (typer.main.get_command), but with each
    sub-command and sub-group built when first asked for (:class:`LazyCommands`)."""
    short, markup = typer_app.pretty_exceptions_short, typer_app.rich_markup_mode
    builders: dict[str, Callable[[], Command]] = {}
    for info in typer_app.registered_commands:  # typer's order: the commands, then the groups
        assert info.name, "every evalh command is registered with its name"
        builders[info.name] = functools.partial(
            typer.main.get_command_from_info, info, pretty_exceptions_short=short, rich_markup_mode=markup
        )
    for group_info in typer_app.registered_groups:
        assert group_info.name, "every evalh command group is registered with its name"
        builders[group_info.name] = functools.partial(
            typer.main.get_group_from_info,
            group_info,
            pretty_exceptions_short=short,
            rich_markup_mode=markup,
            suggest_commands=typer_app.suggest_commands,
        )
    bare = copy.copy(typer_app)  # the same settings and callback (--version), no sub-command to build
    bare.registered_commands, bare.registered_groups = [], []
    group = typer.main.get_group(bare)
    group.commands = LazyCommands(builders)
    return group


def main() -> None:
    try:
        command_group()()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit as exit_:
        _exit_now_if_stuck(exit_.code)
        raise
