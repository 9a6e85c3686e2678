"""The context a run carries: its secrets and its notice policy, apart from any other run in the process.

Entered by every run entry point (:func:`evalh.session.run.evaluate` and ``run_config``, which the Python
API's ``evaluate`` / ``aevaluate`` / ``check`` and the CLI's ``run`` call; ``run_jobs`` for the pytest
plugin; the CLI's ``validate``). The third part, the run's environment overlay (``.env``, ``--env-file``,
the config's ``env:``), is entered where those are read (:mod:`evalh.config.dotenv`) and lives in
:mod:`evalh.common.environment`. All three are context variables: asyncio tasks and
``asyncio.to_thread`` carry them; a plain thread pool is given them with ``contextvars.copy_context().run``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from evalh.common.environment import environ
from evalh.common.notices import run_policy
from evalh.secrets import register_environment, run_registry

__all__ = ["run_context"]


@contextmanager
def run_context() -> Iterator[None]:
    """Within the block, the secrets registered are this run's (over the enclosing ones, which stay
    redacted), and its notices are shown once per run, with the enclosing sink and strictness. The
    environment's secret-named values are the run's first secrets."""
    with run_registry(), run_policy():
        register_environment(environ())
        yield
