"""``evalh view``: the local web viewer of runs (see :mod:`evalh.viewer.server`).

Shows the run store's runs, or the runs named (report files or stored runs). Binds 127.0.0.1 on a free
port unless told otherwise, opens the browser when the terminal is
interactive, and serves until Ctrl-C. ``--host`` on an address other machines reach is allowed, with a
warning: the viewer has no login (and it takes no writes there). The run store's runs can be rated in
the page unless ``--read-only``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from evalh.common.notices import warn
from evalh.errors import ConfigError

if TYPE_CHECKING:  # the server and its modules load only when the command runs (evalh --help stays fast)
    from evalh.viewer.server import ViewerServer
    from evalh.viewer.sources import RunSource

__all__ = ["HELP", "view"]

HELP = (
    "Browse runs in a local web viewer: the run history, a run as a matrix with filters, search and "
    "each result's details, and two runs compared; rate results (pass / fail, score, comment) unless "
    "--read-only. Serves until Ctrl-C."
)

RunsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Runs to show: JSON report files (evalh run -o FILE.json) or stored runs (a run id, latest, "
        "latest~N). Default: every run in the run store.",
        show_default=False,
    ),
]
HostOption = Annotated[
    str,
    typer.Option("--host", help="The address to bind. Anything but a loopback address exposes your runs."),
]
PortOption = Annotated[int, typer.Option("--port", min=0, max=65535, help="The port; 0 picks a free one.")]
NoOpenOption = Annotated[bool, typer.Option("--no-open", help="Do not open a browser.")]
ReadOnlyOption = Annotated[
    bool,
    typer.Option(
        "--read-only", help="Take no writes: the page shows ratings but offers no way to rate results."
    ),
]


def _source(runs: list[str]) -> RunSource:
    from evalh.viewer.sources import GivenRuns, StoredRuns

    if runs:
        return GivenRuns(runs)
    stored = StoredRuns()
    stored.runs()  # a run store that cannot be opened is an error now, not on every page
    return stored


def _start(source: RunSource, host: str, port: int, *, read_only: bool) -> ViewerServer:
    from evalh.viewer.server import ViewerServer, is_loopback

    try:
        server = ViewerServer(source, host, port, read_only=read_only)
    except OSError as error:
        raise ConfigError(
            f"cannot listen on {host}:{port}: {error.strerror or error}",
            where="--host/--port",
            hint="Pick another --port (0 picks a free one) or an address of this machine.",
        ) from None
    if not is_loopback(host):
        warn(
            ConfigError(
                f"the viewer listens on {host}: anyone who reaches this machine can read your runs "
                "(outputs, prompts, configs with secrets redacted); there is no login",
                where="--host",
            ),
            where="--host",
            subject="exposed",
        )
    return server


def view(
    runs: RunsArg = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 0,
    no_open: NoOpenOption = False,
    read_only: ReadOnlyOption = False,
) -> None:
    from evalh.reports.console import echo

    source = _source(list(runs or ()))
    server = _start(source, host, port, read_only=read_only)
    echo(f"evalh view: {len(source.runs())} run(s) at {server.url} (Ctrl-C to stop)")
    try:  # Ctrl-C while the browser command still runs stops the viewer as cleanly as Ctrl-C later
        if not no_open and sys.stdin.isatty() and sys.stdout.isatty():
            import webbrowser  # here: every command loads this module, few open a browser

            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("evalh view: stopped")
    finally:
        server.close()
