"""The embedded JavaScript runtime: promptfoo's wrapping, CommonJS files, limits, cancellation."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evalh.runtimes.javascript import (
    JsFailed,
    JsReturned,
    JsThrown,
    TimedOut,
    call_javascript,
    syntax_problem,
)
from evalh.runtimes.javascript_source import (
    JsFileProblem,
    JsSource,
    file_source,
    function_body,
    inline_source,
    split_js_target,
)

CONTEXT = {"vars": {"name": "Ada", "n": 3}, "prompt": "p"}


def call(source: JsSource, output: Any = "hello world", timeout_s: float = 5.0) -> JsReturned | JsThrown:
    return asyncio.run(call_javascript(source, (output, CONTEXT), timeout_s=timeout_s))


def returned(code: str, output: Any = "hello world") -> Any:
    outcome = call(inline_source(code), output)
    assert isinstance(outcome, JsReturned), outcome
    return outcome.value


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("code", "body"),
    [
        ("output.length > 3", "return output.length > 3"),
        ("  output === 'x'  \n", "return output === 'x'"),
        ("const n = output.length; n > 3", "const n = output.length; return n > 3;"),
        ("let a = 1; let b = 2; a + b;", "let a = 1; let b = 2; return a + b;"),
        ("return output", "return output"),
        ("const x = 1;\nreturn x", "const x = 1;\nreturn x"),
        # one statement on its line (a `value: |` block) runs as written, as promptfoo runs it
        ("throw new Error('deliberate');\n", "throw new Error('deliberate');"),
        ("if (output) { return 1 } else { return 0 }", "if (output) { return 1 } else { return 0 }"),
        ("iffy(output)", "return iffy(output)"),
    ],
)
def test_promptfoo_wrapping_of_inline_code(code: str, body: str) -> None:
    assert function_body(code) == body


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("output.length", 11),
        ("context.vars.name + '!'", "Ada!"),
        ("var words = output.split(' '); words.length", 2),
        ("const n = context.vars.n; n * 2", 6),
        ("let s = 0;\nfor (const w of output.split(' ')) s += w.length;\nreturn s;", 10),
        # ES2020+: arrow functions, optional chaining, nullish coalescing, template literals, regex flags
        ("[1, 2].map((x) => x * 2).at(-1)", 4),
        ("context.vars.missing?.deep ?? 'none'", "none"),
        ("`${context.vars.name}-${output.length}`", "Ada-11"),
        ("/(?<first>\\w+) (?<second>\\w+)/su.exec(output).groups.second", "world"),
        ("JSON.parse(JSON.stringify({a: [1, {b: null}]})).a[1].b", None),
        ("Object.fromEntries([['k', output.replaceAll('o', '0')]]).k", "hell0 w0rld"),
        ("(async () => output.toUpperCase())()", "HELLO WORLD"),
    ],
)
def test_inline_code_sees_output_and_context(code: str, value: Any) -> None:
    assert returned(code) == value


def test_structured_output_crosses_as_json() -> None:
    assert returned("output.items.filter((i) => i.ok).length", {"items": [{"ok": True}, {"ok": False}]}) == 1


def test_a_thrown_error_names_itself_and_its_line() -> None:
    outcome = call(inline_source("const a = 1;\nreturn a.b.c;"))
    assert isinstance(outcome, JsThrown)
    assert outcome.message.startswith("TypeError:")
    assert "(line 2)" in outcome.message


def test_undefined_and_functions_are_reported_by_type() -> None:
    no_return = call(inline_source("const a = 1;\nconst b = 2;"))
    assert no_return == JsReturned(None, "undefined")
    function = call(inline_source("() => 1"))
    assert function == JsReturned(None, "function")


def test_the_sandbox_has_no_file_network_or_process_access() -> None:
    globals_ = "[typeof require, typeof process, typeof fetch, typeof std, typeof os, typeof XMLHttpRequest]"
    assert returned(globals_) == ["undefined"] * 6
    assert returned("console.log('discarded') ?? 1") == 1


def test_syntax_errors_are_found_without_running_and_located() -> None:
    assert syntax_problem(inline_source("output.length > 1")) is None
    problem = syntax_problem(inline_source("const a = 1;\nreturn a +;"))
    assert problem is not None and "SyntaxError" in problem and "line 2" in problem
    unfinished = syntax_problem(inline_source("output.includes("))
    assert unfinished is not None and "end of the code" in unfinished


# ------------------------------------------------------------------------------------------ limits


def test_an_infinite_loop_is_stopped_and_the_next_call_works() -> None:
    looping = inline_source("let i = 0;\nwhile (true) { i++; }")
    with pytest.raises(TimedOut):
        call(looping, timeout_s=0.3)
    assert returned("output.length") == 11


def test_a_promise_that_loops_forever_is_stopped() -> None:
    looping = inline_source("const spin = async () => { while (true) await null; };\nreturn spin();")
    with pytest.raises(TimedOut):
        call(looping, timeout_s=0.3)


def test_runaway_memory_is_stopped_by_the_memory_limit() -> None:
    grow = inline_source("const a = [];\nwhile (true) a.push('x'.repeat(100000));")
    with pytest.raises((JsFailed, TimedOut)) as stopped:
        call(grow, timeout_s=30)
    assert "memory" in str(stopped.value)


def test_cancelling_the_caller_stops_waiting_at_once() -> None:
    """Ctrl-C cancels the task awaiting the call: the cancellation is not held up by the script."""
    events: list[str] = []

    async def scenario() -> None:
        task = asyncio.create_task(
            call_javascript(inline_source("let i = 0;\nwhile (true) i++;"), ("x", {}), timeout_s=30)
        )
        await asyncio.sleep(0.2)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            events.append("cancelled")
        outcome = await call_javascript(inline_source("output + '!'"), ("ok", {}), timeout_s=5)
        events.append(f"next call: {outcome}")

    asyncio.run(scenario())
    assert events == ["cancelled", f"next call: {JsReturned('ok!', 'string')}"]


# ------------------------------------------------------------------------------------------- files


def test_split_target_with_and_without_function() -> None:
    assert split_js_target("file://checks.js:grade") == ("checks.js", "grade")
    assert split_js_target("file://checks.js") == ("checks.js", None)
    assert split_js_target("file://lib/x.cjs:f") == ("lib/x.cjs", "f")


def test_module_exports_function_and_named_export(tmp_path: Path) -> None:
    write(
        tmp_path,
        "checks.js",
        """
        module.exports = function (output, context) { return output.includes(context.vars.name); };
        module.exports.shout = (output) => output.toUpperCase();
    """,
    )
    assert call(file_source("file://checks.js", tmp_path), "hi Ada") == JsReturned(True, "boolean")
    assert call(file_source("file://checks.js:shout", tmp_path), "hi") == JsReturned("HI", "string")


def test_exports_object_with_default(tmp_path: Path) -> None:
    write(tmp_path, "d.cjs", "exports.default = (output) => output.length;\n")
    assert call(file_source("file://d.cjs", tmp_path), "four") == JsReturned(4, "number")


def test_relative_requires_are_served_from_the_config_folder(tmp_path: Path) -> None:
    write(
        tmp_path,
        "lib/words.js",
        "const data = require('./data.json');\nexports.count = (t) => t.split(' ').length + data.bonus;\n",
    )
    write(tmp_path, "lib/data.json", '{"bonus": 10}')
    write(tmp_path, "lib/index.js", "module.exports = { words: require('./words') };\n")
    write(
        tmp_path, "grade.js", "const lib = require('./lib');\nmodule.exports = (o) => lib.words.count(o);\n"
    )
    assert call(file_source("file://grade.js", tmp_path), "a b c") == JsReturned(13, "number")


def test_an_npm_package_is_refused_by_name(tmp_path: Path) -> None:
    write(
        tmp_path, "uses_lodash.js", "const _ = require('lodash');\nmodule.exports = (o) => _.isString(o);\n"
    )
    source = file_source("file://uses_lodash.js", tmp_path)
    assert source.problems and "npm package 'lodash'" in source.problems[0]
    with pytest.raises(JsFailed, match="npm package 'lodash'"):
        call(source)
    write(tmp_path, "uses_fs.js", "module.exports = () => require('fs').readFileSync('/etc/passwd');\n")
    thrown = call(file_source("file://uses_fs.js", tmp_path))
    assert isinstance(thrown, JsThrown) and "Node module 'fs'" in thrown.message


def test_requires_outside_the_folders_or_missing_are_refused(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    write(tmp_path, "secret.js", "module.exports = 'outside';\n")
    write(config_dir, "g.js", "module.exports = () => require('../secret.js');\n")
    write(config_dir, "m.js", "module.exports = () => require('./nope');\n")
    outside = file_source("file://g.js", config_dir)
    assert "outside the config's folder" in outside.problems[0]
    assert "was not found" in file_source("file://m.js", config_dir).problems[0]


def test_unusable_files_are_problems(tmp_path: Path) -> None:
    with pytest.raises(JsFileProblem, match="not found"):
        file_source("file://missing.js", tmp_path)
    with pytest.raises(JsFileProblem, match=r"must end in one of \.js, \.cjs, \.mjs"):
        file_source("file://x.rb", tmp_path)
    write(tmp_path, "noexport.js", "const f = 1;\n")
    with pytest.raises(JsFailed, match="does not export a function"):
        call(file_source("file://noexport.js", tmp_path))
    write(tmp_path, "broken.js", "module.exports = (o) => { return o +; };\n")
    problem = syntax_problem(file_source("file://broken.js", tmp_path))
    assert problem is not None and problem.startswith("broken.js: SyntaxError")
