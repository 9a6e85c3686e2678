"""A var's ``file://`` value, read as promptfoo reads it (``src/evaluatorHelpers.ts``).

Images become a ``data:<mime>;base64,...`` URL (the MIME type from the extension, corrected by the
file's leading bytes when they say another image format), audio and video raw base64, and every other
file is text (trimmed) or, for .json/.yaml, data. A PDF is refused with a located error: evalh does
not extract text from PDFs (promptfoo needs the optional pdf-parse package for it). The bytes are
data: never a template, never run.

A Python or JavaScript file (``file://x.py``, ``file://x.js``, ``.ts``...) is a var script: checked
here (the file and its function exist, without running it) and marked :class:`VarScript`, it runs
for its value when each row renders (runtimes/var_scripts.py).
"""

from __future__ import annotations

import base64
from typing import Any

from evalh.config.files import LoadContext, script_path
from evalh.errors import ConfigError, Where
from evalh.model import VarScript
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES
from evalh.runtimes.prompt_functions import script_problem
from evalh.runtimes.var_scripts import VAR_SCRIPT_FUNCTION

__all__ = ["IMAGE_TYPES", "MEDIA_SUFFIXES", "VAR_SCRIPT_SUFFIXES", "image_mime", "load_var_file"]

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".svg": "image/svg+xml",
}
_AUDIO_VIDEO = frozenset(
    {".wav", ".mp3", ".ogg", ".flac", ".m4a", ".aac", ".opus", ".mp4", ".webm", ".mov", ".avi", ".wmv"}
    | {".mkv", ".m4v"}
)
MEDIA_SUFFIXES = frozenset(IMAGE_TYPES) | _AUDIO_VIDEO
VAR_SCRIPT_SUFFIXES = frozenset((".py", *JS_FILE_SUFFIXES))

# The leading bytes of the binary image formats: a file saved under the wrong extension (a PNG
# named .jpg, common with downloads) still gets the MIME type a vision model will accept.
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def image_mime(suffix: str, data: bytes) -> str:
    """The MIME type of an image file: what its bytes say, else what its extension says."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    return IMAGE_TYPES[suffix]


def load_var_file(ctx: LoadContext, ref: str, where: Where) -> Any:
    """The value a ``file://`` var names (see the module docstring)."""
    path = ctx.resolve(script_path(ref), where)
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        raise ConfigError(
            f"{ref!r} is a PDF; evalh does not extract text from PDF files",
            where=where,
            hint="Save the document's text as a .txt file and name that instead",
        )
    if suffix in VAR_SCRIPT_SUFFIXES:
        return _var_script(ctx, ref, where)
    if suffix not in MEDIA_SUFFIXES:
        return ctx.load_value(ref, where, trim=True)
    data = ctx.read_bytes(path, where)
    encoded = base64.b64encode(data).decode("ascii")
    if suffix in IMAGE_TYPES:
        return f"data:{image_mime(suffix, data)};base64,{encoded}"
    return encoded


def _var_script(ctx: LoadContext, ref: str, where: Where) -> VarScript:
    """A var script, checked without running it: the file exists, the function is defined (Python's
    ``get_var`` by default) and the JavaScript module loads."""
    problem = script_problem(ref, ctx.base_dir, VAR_SCRIPT_FUNCTION)
    if problem is not None:
        raise ConfigError(
            f"var script {ref}: {problem}",
            where=where,
            hint=f"A var script defines {VAR_SCRIPT_FUNCTION}(var_name, prompt, other_vars) (Python) or "
            "exports a function (JavaScript) returning {output: value} or {error: message}; it runs when "
            "each row renders",
        )
    return VarScript(ref)
