"""The editor's schema comment: ``# yaml-language-server: $schema=...`` must point at a file that exists.

``evalh init`` writes ``evalh.schema.json`` beside the config and names it relatively, so completion
travels with the directory. When that file is gone (a fresh clone that ignores generated files, a
renamed folder), the editor silently stops completing; ``evalh validate`` says so, at the comment's
line, with the command that writes the file again. URLs are the editor's business and left alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from evalh.common.notices import warn
from evalh.config.locate import read_text_file
from evalh.errors import ConfigError

__all__ = ["check_schema_comment"]

_MARKER = "yaml-language-server"  # in every line _COMMENT matches
_COMMENT = re.compile(r"^\s*#\s*yaml-language-server:\s*\$schema=(?P<target>\S+)")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def _local_path(target: str, config: Path) -> Path | None:
    """The file ``target`` names, relative to the config's directory; None for a URL."""
    if target.startswith("file://"):
        target = target.removeprefix("file://")
    elif _URL.match(target):
        return None
    path = Path(target).expanduser()
    return path if path.is_absolute() else config.parent / path


def check_schema_comment(config: Path) -> None:
    """Warn (located at the comment's line) when the config's schema comment names a missing local file."""
    try:  # bounded: /dev/zero or a FIFO named as the config must not hang here
        text = read_text_file(config, None)
    except (OSError, ConfigError):
        return  # loading the config reports an unreadable file properly
    if _MARKER not in text:
        return  # most configs: no line to look at (a 5,000-test config has 250,000)
    for number, line in enumerate(text.splitlines(), start=1):
        found = _COMMENT.match(line)
        if found is None:
            continue
        target = found.group("target")
        path = _local_path(target, config)
        if path is None or path.is_file():
            continue
        where = f"{config}:{number}:{found.start('target') + 1}"
        error = ConfigError(
            f"the editor schema {target} does not exist, so editors cannot complete this config",
            where=where,
            hint=f"Write it again with `evalh schema -o {path}`",
        )
        warn(error, where=where, subject="schema comment")
