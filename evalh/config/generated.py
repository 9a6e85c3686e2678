"""The files generated from the assertion registry, shipped so that a run imports only the assertion
families its config uses (the registry's declarations stay the one source; these are their copies).

- ``schemas/evalh.assertions.json``: the config schema's assertion section (every type, its ``not-`` form
  and description, and its value, config and threshold rules: ``config/assertion_schema.py``), which
  ``config/schema.py`` inserts into the base schema instead of importing all 21 families to make it.
- ``evalh/assertions/family_index.py``: the family module that registers each type, which
  ``assertions/registry.get_assertion`` imports when the type is first asked for.

After changing a family (a type added or renamed, its description, value/config schema, threshold,
bounds, ...) write both again::

    python -m evalh.config.generated

``python -m evalh.config.generated --check`` exits 1 and names the stale file when either is out of date
(tests/config/test_generated.py runs it, so a family changed without this fails the tests).
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalh.assertions import registry
from evalh.config.assertion_schema import assertion_section
from evalh.config.schema import ASSERTION_SECTION

__all__ = ["family_index", "generated_files", "index_text", "main", "section_text"]

_ROOT = Path(__file__).resolve().parent.parent.parent  # the checkout: the files are written there
_INDEX_HEADER = '''"""Each assertion type's family module, generated from the registry by ``python -m
evalh.config.generated`` (do not edit; ``evalh/config/generated.py`` says when to write it again)."""

from __future__ import annotations

__all__ = ["FAMILY_OF"]

FAMILY_OF: dict[str, str] = {
'''


@functools.cache
def family_index() -> dict[str, str]:
    """Type -> the family module whose import registers it (a family importing another registers that
    one's types too: they are its). Imports the families one by one, so made once, in a process that
    had imported none yet."""
    loaded = [module for module in registry.FAMILY_MODULES if module in sys.modules]
    if loaded:
        raise RuntimeError(f"the family index needs a fresh process ({loaded[0]} is imported already)")
    index: dict[str, str] = {}
    for module in registry.FAMILY_MODULES:
        before = registry.registered_names()
        importlib.import_module(module)
        index.update(dict.fromkeys(sorted(registry.registered_names() - before), module))
    return dict(sorted(index.items()))


def index_text(index: Mapping[str, str]) -> str:
    """``family_index.py``'s source."""
    lines = "".join(f"    {json.dumps(name)}: {json.dumps(module)},\n" for name, module in index.items())
    return _INDEX_HEADER + lines + "}\n"


def section_text() -> str:
    """``evalh.assertions.json``'s text: the section the registry's families declare."""
    section = assertion_section(registry.all_assertions())
    return json.dumps(section, indent=2, ensure_ascii=False) + "\n"


def generated_files() -> dict[Path, str]:
    """Each generated file (in this checkout) and the text it must hold; in a fresh process only."""
    index = index_text(family_index())  # first: it imports the families one by one
    return {
        _ROOT / "evalh" / "assertions" / "family_index.py": index,
        _ROOT / "schemas" / ASSERTION_SECTION: section_text(),
    }


def main(argv: Sequence[str] = ()) -> int:
    """Write the generated files (``--check``: say which is stale and return 1, writing nothing)."""
    check = "--check" in argv
    stale = []
    for path, text in generated_files().items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(path)
        if not check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        verb = "is out of date: run python -m evalh.config.generated" if check else "written"
        print(f"{path.relative_to(_ROOT)} {verb}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
