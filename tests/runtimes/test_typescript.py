"""TypeScript and ES modules (issue 27): TypeScript's own compiler, run in the embedded engine, turns
``.ts``/``.mts``/``.cts``/``.mjs`` files (and ``.js`` files written as ES modules) into the CommonJS the
loader bundles. Everything here runs the real compiler in the real engine."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evalh.runtimes.javascript import JsReturned, call_javascript, syntax_problem
from evalh.runtimes.javascript_source import JsFileProblem, JsSource, file_source

ROOT = Path(__file__).resolve().parents[2]

GRADER_TS = """\
import type { GradingContext } from './missing-types';
import { threshold, Level } from './lib/util.js';
import settings from './settings.json';

interface Verdict { pass: boolean; score: number; reason: string }

function ratio<T extends { length: number }>(item: T, of: number): number {
  return Math.min(1, item.length / of);
}

export default async function grade(output: string, context: GradingContext): Promise<Verdict> {
  const score: number = ratio<string>(output, settings.longest);
  return { pass: score >= threshold, score, reason: `level ${Level[Level.High]}` };
}

export const mentions = (output: string): boolean => output.includes(settings.word);
"""

UTIL_TS = """\
export enum Level { Low = 1, High = 2 }
export const threshold: number = 0.5;
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def call(source: JsSource, *args: Any) -> Any:
    assert not source.problems, source.problems
    outcome = asyncio.run(call_javascript(source, args, timeout_s=10))
    assert isinstance(outcome, JsReturned), outcome
    return outcome.value


def grader_folder(folder: Path) -> Path:
    write(folder, "grader.ts", GRADER_TS)
    write(folder, "lib/util.ts", UTIL_TS)
    write(folder, "settings.json", '{"longest": 10, "word": "hello"}')
    return folder


def test_typescript_types_enums_generics_default_and_named_exports_run(tmp_path: Path) -> None:
    folder = grader_folder(tmp_path)
    verdict = call(file_source("file://grader.ts", folder), "hello world", {"vars": {}})
    assert verdict == {"pass": True, "score": 1, "reason": "level High"}  # async default export, awaited
    assert call(file_source("file://grader.ts", folder), "hi", {})["pass"] is False  # 0.2 < threshold
    assert call(file_source("file://grader.ts:mentions", folder), "say hello") is True
    assert call(file_source("file://grader.ts:mentions", folder), "bye") is False


def test_import_type_vanishes_and_a_js_import_finds_the_ts_file(tmp_path: Path) -> None:
    source = file_source("file://grader.ts", grader_folder(tmp_path))
    assert "missing-types" not in source.definitions  # a type-only import leaves no require behind
    linked = json.loads(source.definitions.split("var __evalh_links = ", 1)[1].split(";\n", 1)[0])
    targets = {request: path for links in linked.values() for request, path in links.items()}
    assert targets["./lib/util.js"].endswith("lib/util.ts")
    assert targets["./settings.json"].endswith("settings.json")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("check.mjs", "import { twice } from './twice.mjs';\nexport default (output) => twice(output);\n"),
        (
            "check.js",
            "import { twice } from './twice.mjs';\nexport default function (o) { return twice(o); }\n",
        ),
        ("check.mts", "import { twice } from './twice.mjs';\nexport default (o: string) => twice(o);\n"),
        (
            "check.cts",
            "const { twice } = require('./twice.mjs');\nmodule.exports = (o: string) => twice(o);\n",
        ),
    ],
)
def test_es_modules_and_every_typescript_suffix_run(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path, "twice.mjs", "export function twice(text) { return text + text; }\n")
    write(tmp_path, name, text)
    assert call(file_source(f"file://{name}", tmp_path), "ab") == "abab"


def test_a_commonjs_file_is_bundled_as_written(tmp_path: Path) -> None:
    text = "// export default is only a comment here\nmodule.exports = (o) => o.length;\n"
    write(tmp_path, "plain.js", text)
    source = file_source("file://plain.js", tmp_path)
    assert text in source.definitions  # not compiled: byte for byte what the file says
    assert call(source, "abc") == 3


def test_a_typescript_syntax_error_is_located(tmp_path: Path) -> None:
    write(tmp_path, "checks/broken.ts", "export default function (o: string) {\n  return o.length > ;\n}\n")
    with pytest.raises(JsFileProblem, match=r"^checks/broken\.ts:2:21: Expression expected\. \(TS1109\)$"):
        file_source("file://checks/broken.ts", tmp_path)


def test_an_error_in_an_imported_file_names_that_file(tmp_path: Path) -> None:
    write(tmp_path, "main.ts", "import { f } from './helper';\nexport default f;\n")
    write(tmp_path, "helper.ts", "export const f = (o: string) => o +;\n")
    with pytest.raises(JsFileProblem, match=r"^helper\.ts:1:36: Expression expected"):
        file_source("file://main.ts", tmp_path)


def test_top_level_await_is_refused_with_the_fix(tmp_path: Path) -> None:
    write(tmp_path, "tla.mjs", "const data = await Promise.resolve(1);\nexport default () => data;\n")
    with pytest.raises(
        JsFileProblem, match=r"tla\.mjs:1:14: top-level await .* inside the exported function"
    ):
        file_source("file://tla.mjs", tmp_path)
    write(tmp_path, "inner.mjs", "export default async () => { return await Promise.resolve(7); };\n")
    assert call(file_source("file://inner.mjs", tmp_path)) == 7


def test_import_meta_is_refused_with_the_fix(tmp_path: Path) -> None:
    write(tmp_path, "meta.mjs", "export default function () {\n  return import.meta.url;\n}\n")
    with pytest.raises(JsFileProblem, match=r"meta\.mjs:2:10: import\.meta is not available .* test's vars"):
        file_source("file://meta.mjs", tmp_path)


def test_npm_and_node_imports_are_refused_by_name(tmp_path: Path) -> None:
    text = (
        "import _ from 'lodash';\nimport * as fs from 'node:fs';\nimport { createRequire } from 'module';\n"
        "export default () => [_, fs, createRequire];\n"
    )
    write(tmp_path, "deps.ts", text)
    source = file_source("file://deps.ts", tmp_path)
    assert any("npm package 'lodash'" in problem for problem in source.problems)
    assert any("Node module 'node:fs'" in problem for problem in source.problems)
    assert any("Node module 'module'" in problem for problem in source.problems)


def test_a_dynamic_import_of_a_relative_file_is_served(tmp_path: Path) -> None:
    write(tmp_path, "lazy.ts", "export default async () => (await import('./value')).value * 2;\n")
    write(tmp_path, "value.ts", "export const value: number = 21;\n")
    source = file_source("file://lazy.ts", tmp_path)
    assert syntax_problem(source) is None
    assert call(source) == 42


def test_an_unknown_suffix_names_the_ones_evalh_runs(tmp_path: Path) -> None:
    write(tmp_path, "check.rb", "puts 1\n")
    with pytest.raises(JsFileProblem, match=r"\.js, \.cjs, \.mjs, \.ts, \.mts, \.cts"):
        file_source("file://check.rb", tmp_path)


_COMPILE_ONCE = """
import sys
from pathlib import Path
from evalh.runtimes import typescript
from evalh.runtimes.javascript_source import file_source
file_source("file://grader.ts", Path(sys.argv[1]))
print(typescript.compiler_loads())
"""


def _python(code: str, folder: Path, cache: Path, **env: str) -> str:
    """What ``code`` prints, run by a new Python process with ``folder`` as its argument."""
    environment = {**os.environ, "EVALH_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT), **env}
    finished = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return finished.stdout.strip()


def _compile_in_a_new_process(folder: Path, cache: Path, **env: str) -> int:
    return int(_python(_COMPILE_ONCE, folder, cache, **env))


def test_a_rerun_reads_the_compiled_files_from_the_disk_cache(tmp_path: Path) -> None:
    folder = grader_folder(tmp_path / "config")
    cache = tmp_path / "cache"
    assert _compile_in_a_new_process(folder, cache) == 1  # the compiler loads once for both files
    compiled = list((cache / "typescript").glob("*.js"))
    assert len(compiled) == 2  # grader.ts and lib/util.ts
    # written as every cache file is (common/cache_location.py): whole, and readable by this user only
    assert [file.stat().st_mode & 0o777 for file in compiled] == [0o600, 0o600]
    assert [file.name for file in (cache / "typescript").iterdir() if file.suffix != ".js"] == []
    assert _compile_in_a_new_process(folder, cache) == 0  # a new process: both from disk, no compiler
    write(folder, "lib/util.ts", UTIL_TS.replace("0.5", "0.25"))
    assert _compile_in_a_new_process(folder, cache) == 1  # an edited file is compiled again


def test_the_disk_cache_is_off_when_caching_is(tmp_path: Path) -> None:
    folder = grader_folder(tmp_path / "config")
    cache = tmp_path / "cache"
    assert _compile_in_a_new_process(folder, cache, EVALH_CACHE_ENABLED="false") == 1
    assert not (cache / "typescript").exists()


def test_a_named_function_is_found_as_promptfoo_finds_it(tmp_path: Path) -> None:
    # promptfoo's importModule looks ":fn" up on the default export when there is one
    write(tmp_path, "object.ts", "export default { grade: (o: string) => o.length, other: 1 };\n")
    assert call(file_source("file://object.ts:grade", tmp_path), "abcd") == 4
    write(tmp_path, "nested.mjs", "export default { default: (o) => 'inner ' + o };\n")
    assert call(file_source("file://nested.mjs", tmp_path), "x") == "inner x"  # the default's default
    write(tmp_path, "object.cjs", "module.exports = { default: (o) => 'default', grade: (o) => 'named' };\n")
    assert call(file_source("file://object.cjs:grade", tmp_path), "x") == "named"
    assert call(file_source("file://object.cjs", tmp_path), "x") == "default"


def test_a_missing_compiler_is_a_fix_it_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.runtimes import typescript

    write(tmp_path, "check.ts", "export default (o: string) => o;\n")
    monkeypatch.setattr(typescript, "_COMPILER_PACKAGE", "evalh_no_such_compiler")
    typescript._compiler_version.cache_clear()
    try:
        with pytest.raises(JsFileProblem, match=r"TypeScript's compiler is not installed; pip install dukpy"):
            file_source("file://check.ts", tmp_path)
    finally:
        typescript._compiler_version.cache_clear()


_FORKED = """
import os, signal, sys
from pathlib import Path
from evalh.runtimes.javascript_source import file_source
folder = Path(sys.argv[1])
file_source("file://first.ts", folder)  # the parent's compiler thread starts
child = os.fork()
if child == 0:  # a forked process has no threads: it must start its own compiler thread
    signal.alarm(60)  # a child that waits for a thread it does not have dies instead of lingering
    file_source("file://second.ts", folder)
    os._exit(0)
_, status = os.waitpid(child, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_process_compiles_with_a_compiler_of_its_own(tmp_path: Path) -> None:
    write(tmp_path, "first.ts", "export default (o: string) => o;\n")
    write(tmp_path, "second.ts", "export default (o: string) => o + o;\n")
    assert _python(_FORKED, tmp_path, tmp_path / "cache") == "0"  # the child's exit code


def test_a_file_too_deep_for_the_compiler_says_so_and_what_to_do(tmp_path: Path) -> None:
    deep = "(" * 100_000 + "1" + ")" * 100_000
    write(tmp_path, "deep.ts", f"export default (o: string): boolean => {deep} === 1;\n")
    with pytest.raises(JsFileProblem, match=r"^deep\.ts: .*nests expressions too deeply; write it with less"):
        file_source("file://deep.ts", tmp_path)


def test_a_file_past_the_compilers_cpu_limit_says_so_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalh.runtimes.typescript as typescript

    monkeypatch.setattr(typescript, "_FILE_LIMIT_S", 0.001)  # instead of a 50 MB file's 16 s
    lines = "".join(f"export const v{n}: number = {n} * 2;\n" for n in range(20_000))
    write(tmp_path, "big.ts", lines + "export default (o: string) => o;\n")
    with pytest.raises(JsFileProblem, match=r"^big\.ts: .*more than 0.001 s of CPU.*split it into smaller"):
        file_source("file://big.ts", tmp_path)
