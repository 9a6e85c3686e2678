"""The ``evalh`` program (the console script and ``python -m evalh``): :func:`evalh.cli.app.main`, then the
process ends without tearing the interpreter down.

Freeing every object of a big run one by one at interpreter exit takes a noticeable part of a second and
serves nothing once the reports are written and closed. So, when the command ended with an exit code,
no other thread is still alive and stdout and stderr flush cleanly, the exit functions run (they kill the
programs evalh started, flush logging) and ``os._exit`` ends the process. Anything else (an exception,
an exit message, a live thread, a closed pipe) takes the ordinary way out. Never used by ``cli.main``
itself: tests and embedders call that in-process.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

from evalh.cli.app import main

__all__ = ["run_program"]


def run_program() -> NoReturn:
    try:
        main()
    except SystemExit as exit_:
        code = exit_.code
        if code is not None and not isinstance(code, int):
            raise
        _end_process(code or 0, exit_)
    _end_process(0, SystemExit(0))


def _end_process(code: int, exit_: SystemExit) -> NoReturn:
    main_thread = threading.main_thread()
    alive = (t for t in threading.enumerate() if t is not main_thread and t.is_alive() and not t.daemon)
    if any(alive):
        raise exit_  # the ordinary exit waits for that thread, as it always has
    atexit._run_exitfuncs()  # what the interpreter would run at exit, before anything is lost
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise exit_ from None  # a closed pipe: the interpreter reports it as it always has
    os._exit(code)
