"""The one exception tree of evalh. Only ``evalh.cli.app`` catches these and turns them into exit codes.

::

    EvalhError (exit 1)                  anything evalh refuses to do, with a one-paragraph message
    ├── ConfigError (exit 2)             the config, a file it names, or a CLI flag is wrong
    │   ├── ConfigFileError              a file:// path is missing or unreadable
    │   ├── SchemaError                  the config breaks schemas/evalh.schema.json
    │   └── TemplateError                a Jinja2 template does not parse or names an undefined variable
    ├── ProviderError (exit 1)           a provider could not be built or answered badly (becomes an ERROR row
    │   │                                when raised during a run)
    │   └── ProviderHTTPError            an HTTP provider's server refused or failed, after retries
    ├── ModelAssetError (exit 1)         the bundled model file is missing or its sha256 does not match
    ├── ReportError (exit 1)             a report file could not be written
    └── StoreError (exit 1)              the run store cannot be used (a run then goes on unrecorded)

Every message says where the problem is (file:line:column and the JSON path when known) and what to do,
and never a secret: :meth:`EvalhError.render` redacts every secret value of the run (:mod:`evalh.secrets`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalh.secrets import redact_text, scrub_urls

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "ConfigError",
    "ConfigFileError",
    "EvalhError",
    "ModelAssetError",
    "Place",
    "ProviderError",
    "ProviderHTTPError",
    "ReportError",
    "SchemaError",
    "StoreError",
    "TemplateError",
    "TemplateSyntaxProblem",
    "Where",
    "then",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
# A run stopped by a signal exits 128 + its number, as a shell reports a process the signal killed
# (the finished rows are still written to every report).
EXIT_HANGUP = 129  # SIGHUP: the terminal closed
EXIT_BROKEN_PIPE = 141  # stdout's reader closed it (`| head`), as a shell reports a process ended by SIGPIPE
EXIT_INTERRUPTED = 130  # SIGINT: Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM: CI cancellation, timeout, docker stop


class Place:
    """Where something was written, put into words (``file:line:col path``) only when a message needs
    it: a line and column need the position of every node, which a large config is read without
    (loading 50,000 tests kept over 300 MB of them); the config is located again on the first ask."""

    __slots__ = ("_args", "_describe", "_text")

    def __init__(self, describe: Callable[..., str], *args: Any) -> None:
        # ``describe(*args)``: a function and its arguments, lighter than a closure for each of the
        # 300,000 assertions of a 50,000-test suite
        self._describe = describe
        self._args = args
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._describe(*self._args)
            self._args = ()
        return self._text

    def then(self, suffix: str) -> Place:
        """This place with ``suffix`` (``.value``, ``[2]``) added to its words; the same line and column."""
        return Place(_suffixed, self, suffix)


def _suffixed(place: Place, suffix: str) -> str:
    return f"{place}{suffix}"


# Where a problem is: words already, or a Place put into words when a message is made.
Where = str | Place


def then(where: Where, suffix: str) -> Where:
    """``where`` with ``suffix`` added to its words, still unlocated if it was."""
    return where.then(suffix) if isinstance(where, Place) else where + suffix


class EvalhError(Exception):
    """Root of every error evalh reports to a user. ``exit_code`` is what the CLI exits with."""

    exit_code: int = EXIT_FAILED

    def __init__(self, message: str, *, where: Where | None = None, hint: str | None = None) -> None:
        self.message = message
        self.where = None if where is None else str(where)
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """One paragraph: ``where: message. hint``, URLs scrubbed and secret values redacted."""
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text = f"{text.rstrip('.')}. {self.hint}"
        return redact_text(scrub_urls(text))


class ConfigError(EvalhError):
    """The config (or a CLI flag standing in for it) is invalid."""

    exit_code = EXIT_CONFIG


class ConfigFileError(ConfigError):
    """A file the config names (file://, a glob, the config itself) is missing or unreadable."""


class SchemaError(ConfigError):
    """The config does not satisfy schemas/evalh.schema.json."""


class TemplateError(ConfigError):
    """A template does not parse, or renders an undefined variable."""


class TemplateSyntaxProblem(TemplateError):
    """A template does not parse (or names an unknown filter): in a prompt, its rows are ERRORs, as in
    promptfoo; a template the sandbox refuses is a plain TemplateError, always fatal."""


class ProviderError(EvalhError):
    """A provider failed; during a run this becomes an ERROR row and the run goes on."""


class ProviderHTTPError(ProviderError):
    """An HTTP provider's server answered with an error (after retries) or could not be reached."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        attempts: int = 1,
        where: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(message, where=where, hint=hint)


class ModelAssetError(EvalhError):
    """The bundled (or configured) local model or tokenizer is missing or altered."""


class ReportError(EvalhError):
    """A report could not be written."""


class StoreError(EvalhError):
    """The run store ($EVALH_HOME/runs.sqlite3) cannot be opened or used. Exit 2, as a setting to fix:
    1 would read as "a test failed" (or, from ``diff``, as new failures). ``run`` records nothing
    then and keeps its tests' exit code."""

    exit_code = EXIT_CONFIG
