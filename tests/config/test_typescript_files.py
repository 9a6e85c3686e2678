"""TypeScript and ES modules wherever a config names a JavaScript file (issue 27), through the CLI with the
real compiler and engine: assertions (also from a CSV ``__expected`` cell), prompt functions, transforms
(output, transformVars, an assertion's, contextTransform) and nunjucksFilters. A broken file is a located
config error at validate."""

from __future__ import annotations

from pathlib import Path

from tests.config.test_promptfoo_semantics import evalh, run_rows, write

GRADER = """
import { minimum } from './limits.js';

interface Verdict { pass: boolean; score: number; reason: string }

export default (output: string): Verdict => ({
  pass: output.length >= minimum, score: 1, reason: `length ${output.length}`,
});
export function shouts(output: string): boolean { return output === output.toUpperCase(); }
"""

PROMPT = """
type Context = { vars: { name: string }, provider: { id: string } };
export default function (context: Context): string { return `Hi ${context.vars.name}`; }
export const chat = (context: Context) => [{ role: 'user' as const, content: context.vars.name }];
"""


def test_typescript_and_es_module_files_work_in_every_javascript_place(tmp_path: Path) -> None:
    write(tmp_path / "grader.ts", GRADER)
    write(tmp_path / "limits.ts", "export const minimum: number = 3;\n")
    write(tmp_path / "prompt.ts", PROMPT)
    write(tmp_path / "upper.mjs", "export default (output) => output.toUpperCase();\n")
    write(tmp_path / "vars.mts", "export default (vars: {name: string}) => ({ name: vars.name + '!' });\n")
    write(tmp_path / "filters.cts", "module.exports = (value: string): string => `<${value}>`;\n")
    write(tmp_path / "tests.csv", "name,__expected\nBob,file://grader.ts:shouts\n")
    config = write(
        tmp_path / "c.yaml",
        """
        nunjucksFilters: {angle: file://filters.cts}
        prompts: [file://prompt.ts, "file://prompt.ts:chat", "{{ name | angle }}"]
        providers: [echo]
        defaultTest:
          options: {transform: file://upper.mjs, transformVars: file://vars.mts}
        tests:
          - vars: {name: Ada}
            assert:
              - {type: javascript, value: file://grader.ts}
              - {type: javascript, value: "file://grader.ts:shouts"}
              - {type: equals, value: "hi ada!", transform: "file://upper.mjs", metric: untransformed}
          - file://tests.csv
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 1, result.stderr  # the last check fails on purpose (HI ADA! != hi ada!)
    outputs = [row["response"]["output"] for row in rows]
    chat = '[\n  {\n    "ROLE": "USER",\n    "CONTENT": "ADA!"\n  }\n]'  # the echo of the chat, upper-cased
    # transformVars (.mts) adds "!", the prompt function (.ts) or the filter (.cts) writes the prompt, and
    # the output transform (.mjs) upper-cases the echo
    assert outputs == ["HI ADA!", chat, "<ADA!>", "HI BOB!", chat.replace("ADA", "BOB"), "<BOB!>"]
    first = rows[0]["gradingResult"]["componentResults"]
    assert [part["pass"] for part in first] == [True, True, False]
    assert first[0]["reason"] == "length 7"
    csv_row = rows[3]["gradingResult"]["componentResults"]
    assert [part["pass"] for part in csv_row] == [True]  # file://grader.ts:shouts from the CSV cell


def test_a_broken_typescript_file_is_a_located_config_error(tmp_path: Path) -> None:
    write(tmp_path / "grader.ts", "export default (output: string) => output.length > ;\n")
    write(tmp_path / "prompt.mts", "const x = await 1;\nexport default () => String(x);\n")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: [file://prompt.mts]
        providers: [echo]
        tests:
          - assert: [{type: javascript, value: file://grader.ts}]
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "c.yaml:2" in result.stderr and "prompt.mts:1:11: top-level await" in result.stderr
    assert "c.yaml:5" in result.stderr and "grader.ts:1:52: Expression expected" in result.stderr


def test_a_provider_transform_may_be_typescript(tmp_path: Path) -> None:
    write(tmp_path / "wrap.ts", "export default (output: string): string => `[${output}]`;\n")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{ word }}"]
        providers: [{id: echo, transform: file://wrap.ts}]
        tests: [{vars: {word: hi}, assert: [{type: equals, value: "[hi]"}]}]
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert rows[0]["response"]["output"] == "[hi]"


def test_cache_info_counts_and_clear_deletes_the_compiled_files(tmp_path: Path) -> None:
    write(tmp_path / "check.ts", "export default (output: string): boolean => output.length > 0;\n")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: [hi]
        providers: [echo]
        tests: [{assert: [{type: javascript, value: file://check.ts}]}]
        """,
    )
    assert evalh("validate", str(config)).exit_code == 0
    assert "compiled TypeScript / ES module files: 1 (" in evalh("cache", "info").stdout
    cleared = evalh("cache", "clear")
    assert cleared.exit_code == 0 and "Deleted 1 compiled TypeScript / ES module files." in cleared.stdout
    assert "compiled TypeScript" not in evalh("cache", "info").stdout
