"""Several configs as one (``-c a.yaml -c b.yaml``), merged as promptfoo merges them.

Lists concatenate: ``providers`` (``targets`` too; duplicates dropped), ``prompts`` (duplicates
dropped), ``tests``, ``scenarios`` and ``outputPath``. Mappings merge, later files winning: ``env``,
``evaluateOptions``, ``commandLineOptions``, ``metadata``; ``defaultTest`` merges its ``vars``,
``options`` and ``metadata`` and concatenates its ``assert``. Descriptions are joined with ", ". Any
other key: the last file's. ``file://`` prompts, tests files and ``vars`` files named at the top of a
later config are made absolute, so each resolves from its own config's directory. Every position
still points into the file that wrote it: ``b.yaml:7:5 tests[4]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.config.locate import Document, JsonPath

__all__ = ["MergedDocument", "merge_documents"]

_LISTS = ("providers", "prompts", "tests", "scenarios", "outputPath")
_MAPPINGS = ("env", "evaluateOptions", "commandLineOptions", "metadata")
_FILE = "file://"


@dataclass
class MergedDocument(Document):
    """A merged config whose positions point into the file each part came from."""

    items: dict[tuple[str, int], tuple[Document, JsonPath]] = field(default_factory=dict)
    keys: dict[str, Document] = field(default_factory=dict)

    def locate(self, path: JsonPath) -> str:
        if len(path) >= 2 and isinstance(path[1], int) and (str(path[0]), path[1]) in self.items:
            source, inner = self.items[(str(path[0]), path[1])]
            return source.locate((*inner, *path[2:]))
        if path and str(path[0]) in self.keys:
            return self.keys[str(path[0])].locate(path)
        return self.file


def merge_documents(documents: Sequence[Document], paths: Sequence[Path]) -> MergedDocument:
    """One document of several configs (their data must be mappings)."""
    merged = MergedDocument(data={}, file=" + ".join(doc.file for doc in documents))
    data: dict[str, Any] = merged.data
    for document, path in zip(documents, paths, strict=True):
        own: Mapping[str, Any] = document.data
        for key, value in own.items():
            target = "providers" if key == "targets" else key
            if target in _LISTS:
                _extend(merged, target, key, value, document, path.parent)
            elif target in _MAPPINGS and isinstance(value, Mapping):
                data[target] = {**(data.get(target) or {}), **value}
            elif (
                target == "defaultTest" and isinstance(value, Mapping) and isinstance(data.get(key), Mapping)
            ):
                data[key] = _merge_default_test(data[key], value)
            elif target == "description" and isinstance(data.get(key), str) and isinstance(value, str):
                data[key] = f"{data[key]}, {value}"
            else:
                data[target] = value
            merged.keys[target] = document
    return merged


def _extend(
    merged: MergedDocument, target: str, key: str, value: Any, document: Document, base: Path
) -> None:
    items = value if isinstance(value, list) else [value]
    current: list[Any] = merged.data.setdefault(target, [])
    seen = {json.dumps(item, sort_keys=True, default=str) for item in current}
    for index, item in enumerate(items):
        item = _absolute(item, base) if target != "outputPath" else item
        fingerprint = json.dumps(item, sort_keys=True, default=str)
        if target in ("providers", "prompts") and fingerprint in seen:
            continue  # promptfoo drops a provider or prompt two configs both name
        seen.add(fingerprint)
        inner: JsonPath = (key, index) if isinstance(value, list) else (key,)
        merged.items[(target, len(current))] = (document, inner)
        current.append(item)


def _absolute(item: Any, base: Path) -> Any:
    """A ``file://`` reference (or ``{id: file://...}``, a test's ``vars: file://...``) from ``base``."""
    if isinstance(item, str) and item.startswith(_FILE):
        return _FILE + str((base / item[len(_FILE) :]).resolve())
    if isinstance(item, Mapping):
        return {
            key: _absolute(value, base) if key in ("id", "vars") and isinstance(value, str) else value
            for key, value in item.items()
        }
    return item


def _merge_default_test(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**before, **after}
    for key in ("vars", "options", "metadata"):
        if isinstance(before.get(key), Mapping) or isinstance(after.get(key), Mapping):
            merged[key] = {**(before.get(key) or {}), **(after.get(key) or {})}
    merged["assert"] = [*(before.get("assert") or []), *(after.get("assert") or [])]
    if not merged["assert"]:
        del merged["assert"]
    return merged
