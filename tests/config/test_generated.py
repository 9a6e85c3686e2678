"""The files generated from the assertion registry (evalh/config/generated.py) hold what the registry's
families declare, and a run that reads them imports only the families its config uses while resolving
every type, and saying every unknown one, exactly as with all the families imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalh.assertions.family_index import FAMILY_OF
from evalh.assertions.registry import ASSERTIONS, FAMILY_MODULES, all_assertions, base_type, get_assertion
from evalh.config.assertion_schema import assemble, assertion_section
from evalh.config.generated import index_text, section_text
from evalh.config.schema import ASSERTION_SECTION, assembled_text, base_schema, schema_path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    if cwd is not None:
        env["EVALH_HOME"] = str(cwd / "home")
        env["EVALH_CACHE_DIR"] = str(cwd / "cache")
    command = [sys.executable, "-c", textwrap.dedent(code), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_the_shipped_files_are_what_the_families_declare_now() -> None:
    # A family's type, description or value/config/threshold rule changed without running
    # `python -m evalh.config.generated` fails here (and the --check below names the stale file).
    assert schema_path(ASSERTION_SECTION).read_text(encoding="utf-8") == section_text()
    checked = _python("import sys\nfrom evalh.config.generated import main\nsys.exit(main(['--check']))")
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout + checked.stderr


def test_the_check_names_a_stale_file_and_writing_makes_it_current(tmp_path: Path) -> None:
    # the generator run on a copy of the checkout's generated files, one of them stale
    code = """
        import sys
        from pathlib import Path
        import evalh.config.generated as generated
        generated._ROOT = Path(sys.argv[1])
        print(generated.main(['--check']), generated.main([]), generated.main(['--check']))
    """
    for folder in ("evalh/assertions", "schemas"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "evalh/assertions/family_index.py").write_text(index_text(FAMILY_OF), encoding="utf-8")
    section = json.loads(section_text())
    section["enum"].remove("contains")
    (tmp_path / "schemas" / ASSERTION_SECTION).write_text(json.dumps(section), encoding="utf-8")
    done = _python(code, str(tmp_path))
    assert done.stdout.splitlines() == [
        f"schemas/{ASSERTION_SECTION} is out of date: run python -m evalh.config.generated",
        f"schemas/{ASSERTION_SECTION} written",
        "1 0 0",
    ], done.stderr
    assert (tmp_path / "schemas" / ASSERTION_SECTION).read_text(encoding="utf-8") == section_text()


def test_the_assembled_schema_is_the_one_made_from_every_family() -> None:
    registry = all_assertions()
    assert assembled_text() == json.dumps(assemble(base_schema(), registry), ensure_ascii=False)
    assert json.loads(section_text()) == assertion_section(registry)


def test_the_index_names_every_registered_type_and_only_those() -> None:
    assert set(FAMILY_OF) == set(all_assertions())
    assert set(FAMILY_OF.values()) <= set(FAMILY_MODULES)


def test_each_family_alone_registers_the_types_the_index_gives_it() -> None:
    code = """
        import importlib, json, sys
        from evalh.assertions import registry
        importlib.import_module(sys.argv[1])
        print(json.dumps(sorted(registry.registered_names())))
    """
    for module in sorted(set(FAMILY_OF.values())):
        done = _python(code, module)
        registered = set(json.loads(done.stdout))
        assert {name for name, home in FAMILY_OF.items() if home == module} <= registered, module


# In a fresh process, each type written in a config (its not- form and unknown names too) is looked up
# the run's way (get_assertion, the checker's mapping) before all_assertions() has imported anything.
_LOOKUPS = """
    import json, sys
    from evalh.assertions import registry
    out = {}
    for written in json.loads(sys.argv[1]):
        name, _ = registry.base_type(written)
        found = registry.get_assertion(name)
        via_mapping = registry.ASSERTIONS.get(name)
        family = None if found is None else found.family
        out[written] = [family, found is via_mapping, name in registry.ASSERTIONS]
    families = sorted(m for m in registry.FAMILY_MODULES if m in sys.modules)
    every = registry.all_assertions()
    same = {w: registry.get_assertion(registry.base_type(w)[0]) is every.get(registry.base_type(w)[0])
            for w in out}
    print(json.dumps([out, families, same]))
"""


def test_every_type_its_not_form_and_unknown_names_resolve_as_with_every_family_imported() -> None:
    registry = all_assertions()
    written = [*registry, *(f"not-{name}" for name in registry), "contians", "not-nope", "", "not-"]
    done = _python(_LOOKUPS, json.dumps(written))
    assert done.returncode == 0, done.stderr
    found, _, same = json.loads(done.stdout)
    expected = {}
    for name in written:
        definition = registry.get(base_type(name)[0])
        expected[name] = [None if definition is None else definition.family, True, definition is not None]
    assert found == expected
    assert all(same.values())
    assert ASSERTIONS["contains"] is get_assertion("contains") is registry["contains"]
    with pytest.raises(KeyError):
        ASSERTIONS["contians"]
    assert ASSERTIONS.get("contians", "none") == "none" and ASSERTIONS.get("contians") is None
    assert "contains" in ASSERTIONS and "contians" not in ASSERTIONS and len(ASSERTIONS) == len(registry)


def test_looking_up_one_type_imports_its_family_only() -> None:
    done = _python(_LOOKUPS, json.dumps(["not-contains", "starts-with"]))
    found, families, _ = json.loads(done.stdout)
    assert found["not-contains"][0] == "text"
    assert families == ["evalh.assertions.text"]  # the families imported before all_assertions()
    done = _python(_LOOKUPS, json.dumps(["contians"]))
    assert json.loads(done.stdout)[1] == []  # an unknown type imports no family to say so


_BROKEN = {
    "unknown": "- {type: contians, value: a}",
    "unknown-not": "- {type: not-contians, value: a}",
    "promptfoo-only": "- {type: not-moderation}",
    "bad-value": "- {type: levenshtein, value: a, threshold: -1}",
    "bad-config": "- {type: regex, value: a, config: {timeot: 3}}",
    "good": "- {type: icontains, value: A}",
}


@pytest.mark.parametrize("case", sorted(_BROKEN))
def test_validate_says_what_it_said_with_every_family_imported(case: str, tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(
        "prompts: ['{{answer}}']\nproviders: [echo]\ntests:\n  - vars: {answer: a}\n    assert:\n"
        + textwrap.indent(_BROKEN[case], "      ")
        + "\n",
        encoding="utf-8",
    )
    code = """
        import sys
        from evalh.cli.app import main
        if sys.argv[1] == "all":
            from evalh.assertions.registry import all_assertions
            all_assertions()
        sys.argv = ["evalh", "validate", "-c", "evalh.yaml"]
        main()
    """
    fresh = _python(code, "fresh", cwd=tmp_path)
    every = _python(code, "all", cwd=tmp_path)
    assert (fresh.returncode, fresh.stdout, fresh.stderr) == (every.returncode, every.stdout, every.stderr)
    assert fresh.returncode == (0 if case == "good" else 2), fresh.stderr
