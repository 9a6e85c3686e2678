"""The shapes of config values known to pass the schema, kept between runs (like Python's bytecode cache).

A shape (``config/shapes.py`` ``_shape``) is what the schema can tell apart in a value; two values with
the same shape are both valid or both not. A validator that meets only shapes it has seen pass, in this
process or an earlier one, needs no jsonschema at all (its import alone is ~0.2 s of ``evalh validate``).
The file ``<cache folder>/schema-shapes.json`` holds, per validator, stable digests (sha256 of a canonical
text) of the valid shapes: no config text, no values, never pickle. Its key is a digest of the assembled
schema, jsonschema's version and evalh's: another schema never reuses an entry.

Beside the shapes, it keeps digests of the exact values found valid (``values``: the sha256 of a value's
compact JSON, for the values that JSON gives back exactly): a warm load of 5,000 unchanged tests then
computes no shape at all (hashing each test's JSON costs a fifth of shaping it). A value holding a URL or a
registered secret is never kept, even hashed. They are capped apart (MAX_VALUES): past the cap, only the
last load's are kept, and the shapes stay. A corrupt, foreign,
huge or unreadable file is ignored and rewritten; an unwritable folder is skipped silently.
``EVALH_CACHE_ENABLED=false`` turns it off; ``--no-cache`` (promptfoo's flag for provider responses)
does not, as it holds nothing a run's results depend on.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from evalh.common.cache_location import cache_dir, cache_enabled, write_cache_file
from evalh.common.version import __version__
from evalh.secrets import holds_nothing_to_redact, redact_bytes

__all__ = [
    "CACHE_FILE",
    "MAX_SHAPES",
    "MAX_VALUES",
    "KnownShapes",
    "clear_known_shapes",
    "known_shapes",
    "remember_valid_shapes",
    "shape_cache_file",
    "shape_digest",
    "value_digest",
]

CACHE_FILE = "schema-shapes.json"
MAX_SHAPES = 20_000  # digests kept (a few dozen per config); beyond it only the last load's are kept
MAX_VALUES = 60_000  # digests of valid values (one per test of the last large suites)
_MAX_FILE_BYTES = 4 * 1024 * 1024  # a file larger than the caps' digests can fill is not ours: ignored
_DIGEST_CHARS = 32
_ATOMS = (str, int, float, bool, type(None))


def shape_digest(shape: Hashable) -> str | None:
    """A digest of ``shape`` that is the same in every process (a hash() of text is not: PYTHONHASHSEED);
    None for a shape holding something without a stable text (then it is kept in this process only)."""
    text = _canonical(shape)
    return None if text is None else value_digest(text.encode("utf-8", "surrogatepass"))


def value_digest(data: bytes) -> str:
    """The digest kept for ``data`` (a shape's canonical text, a value's compact JSON)."""
    return hashlib.sha256(data).hexdigest()[:_DIGEST_CHARS]


def _canonical(shape: Any) -> str | None:
    """Text telling apart every two different shapes: atoms by type and repr, a set's items sorted."""
    if isinstance(shape, _ATOMS):
        return f"{type(shape).__name__}:{shape!r}"
    if isinstance(shape, tuple | frozenset):
        parts = [_canonical(item) for item in shape]
        if any(part is None for part in parts):
            return None
        texts: list[str] = parts  # type: ignore[assignment]  # no None left
        if isinstance(shape, tuple):
            return "(" + ",".join(texts) + ")"
        return "{" + ",".join(sorted(texts)) + "}"
    name = getattr(shape, "shape_name", None)  # schema.py's marks (true, false, non-finite, ...)
    return f"mark:{name}" if isinstance(name, str) else None


def _holds_secret(shape: Any) -> bool:
    """Whether a text in ``shape`` (a mapping key kept whole, such as a provider's URL) holds what the
    secrets module redacts: a URL's credentials or secret query values, a registered secret value."""
    if isinstance(shape, str):
        return not holds_nothing_to_redact(shape)
    if isinstance(shape, tuple | frozenset):
        return any(_holds_secret(item) for item in shape)
    return False


class KnownShapes:
    """The valid shapes' and values' digests per validator, read once from the cache file, written back
    with the new ones at the end of a load."""

    def __init__(self, path: Path | None, key: str) -> None:
        self.path = path
        self.key = key
        self._known: dict[str, set[str]] = {}
        self._new: dict[str, set[str]] = {}
        self._values: dict[str, set[str]] = {}
        self._new_values: dict[str, set[str]] = {}
        self._seen_values: dict[str, set[str]] = {}  # known values met since the last save
        if path is not None:
            self._known, self._values = _read(path, key)

    def knows(self, validator: str, shape: Hashable) -> bool:
        digests = self._known.get(validator)
        if not digests:
            return False
        digest = shape_digest(shape)
        return digest is not None and digest in digests

    def learn(self, validator: str, shape: Hashable) -> None:
        if _holds_secret(shape):
            return  # a digest of a URL's password or a known secret value is not kept, even hashed
        digest = shape_digest(shape)
        if digest is not None and digest not in self._known.get(validator, ()):
            self._new.setdefault(validator, set()).add(digest)

    def knows_value(self, validator: str, digest: str) -> bool:
        """Whether a value whose exact JSON has ``digest`` (:func:`value_digest`) was found valid."""
        if digest not in self._values.get(validator, ()):
            return False
        self._seen_values.setdefault(validator, set()).add(digest)
        return True

    def learn_value(self, validator: str, digest: str, encoded: bytes, value: Any) -> None:
        """Keep the ``digest`` of a valid ``value`` whose exact compact JSON is ``encoded``: never of one
        holding a URL (which may carry credentials) or anything the secrets module redacts (a registered
        secret, a secret-looking key's value such as a tests file's ``password`` var, an ``env`` map),
        whose digest a dictionary of likely values would find."""
        if self.path is None or b"://" in encoded or redact_bytes(encoded) != encoded:
            return
        if not holds_nothing_to_redact(value):  # a test of the config: the load's one walk answers
            return
        self._new_values.setdefault(validator, set()).add(digest)

    def save(self) -> None:
        """Write the file with the shapes and values learnt since the last save (atomically; silently
        not at all when the folder is not writable)."""
        if self.path is None or not (self._new or self._new_values):
            return
        self._known = _merged(self._known, self._new, {}, MAX_SHAPES)
        self._values = _merged(self._values, self._new_values, self._seen_values, MAX_VALUES)
        self._new, self._new_values, self._seen_values = {}, {}, {}
        shapes = {name: sorted(digests)[:MAX_SHAPES] for name, digests in sorted(self._known.items())}
        values = {
            name: "".join(sorted(digests)[:MAX_VALUES]) for name, digests in sorted(self._values.items())
        }
        text = json.dumps({"key": self.key, "shapes": shapes, "values": values}, separators=(",", ":"))
        write_cache_file(self.path, [text.encode()], prefix=".schema-shapes-")


def _merged(
    known: dict[str, set[str]], new: dict[str, set[str]], seen: dict[str, set[str]], limit: int
) -> dict[str, set[str]]:
    """``known`` with ``new``; past ``limit`` digests in all, only this load's (``new`` and ``seen``)."""
    merged = {name: set(digests) for name, digests in known.items()}
    for name, digests in new.items():
        merged.setdefault(name, set()).update(digests)
    if sum(len(digests) for digests in merged.values()) <= limit:
        return merged
    kept = {name: set(digests) for name, digests in seen.items()}
    for name, digests in new.items():
        kept.setdefault(name, set()).update(digests)
    return kept


def _read(path: Path, key: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The file's shape and value digests when it is ours and for this schema; else none (never an
    error)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_FILE_BYTES + 1)
        data = json.loads(raw) if len(raw) <= _MAX_FILE_BYTES else None
    except (OSError, ValueError):
        return {}, {}
    if not isinstance(data, Mapping) or data.get("key") != key or not isinstance(data.get("shapes"), Mapping):
        return {}, {}
    known: dict[str, set[str]] = {}
    for name, digests in data["shapes"].items():
        if isinstance(name, str) and isinstance(digests, list):
            known[name] = {digest for digest in digests if isinstance(digest, str)}
    values: dict[str, set[str]] = {}
    stored = data.get("values")
    for name, joined in stored.items() if isinstance(stored, Mapping) else ():
        # one text of digests end to end: 60,000 of them read in a few milliseconds
        if isinstance(name, str) and isinstance(joined, str) and len(joined) % _DIGEST_CHARS == 0:
            values[name] = {joined[at : at + _DIGEST_CHARS] for at in range(0, len(joined), _DIGEST_CHARS)}
    return known, values


_opened: list[KnownShapes] = []  # the stores this process opened (one per schema text), saved after a load


def shape_cache_file() -> Path | None:
    """The file, or None when the environment turns caching off (read on each load: the API may load
    configs under different settings)."""
    return cache_dir() / CACHE_FILE if cache_enabled() else None


@functools.cache
def known_shapes(schema_text: str, path: Path | None) -> KnownShapes:
    """This process's known shapes for the schema ``schema_text``, kept in ``path`` (None: forgotten)."""
    key = hashlib.sha256(
        "\0".join([schema_text, _jsonschema_version(), __version__]).encode("utf-8", "surrogatepass")
    ).hexdigest()
    store = KnownShapes(path, key)
    _opened.append(store)
    return store


def _jsonschema_version() -> str:
    """jsonschema's installed version, read without importing it, nor importlib.metadata (which loads
    the email package): the name of its ``.dist-info`` folder; else where it is and when it changed."""
    from importlib.util import find_spec

    spec = find_spec("jsonschema")
    if spec is None or spec.origin is None:
        return "absent"
    package = Path(spec.origin).parent
    found = sorted(path.name for path in package.parent.glob("jsonschema-*.dist-info"))
    if len(found) == 1:
        return found[0]
    try:
        return f"{package}:{package.stat().st_mtime_ns}"
    except OSError:
        return str(package)


def clear_known_shapes() -> bool:
    """Delete the file (``evalh cache clear``); True when there was one."""
    path = cache_dir() / CACHE_FILE
    try:
        path.unlink()
    except OSError:
        return False
    return True


def remember_valid_shapes() -> None:
    """At the end of a load: write the shapes newly found valid."""
    for store in _opened:
        store.save()
