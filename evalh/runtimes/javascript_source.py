"""The JavaScript program evalh runs for a ``javascript`` assertion or a transform, built from config text.

Inline code follows promptfoo's wrapping (``src/assertions/javascript.ts``): it is the body of a function
of its parameters (``output, context``). One line gets ``return`` put before it; when that line starts
with ``const``/``let``/``var``, the ``return`` goes before its last statement (``const n = 2; n > 1``);
several lines are the body as written (so they must ``return``).

``file://x.js[:fn]`` loads a file promptfoo runs as JavaScript (:data:`JS_FILE_SUFFIXES`): CommonJS
(``module.exports = ...``, ``exports.fn = ...``), ES modules (``export default``, ``export function fn``;
``.mjs``, or ``.js`` written with ``import``/``export``) and TypeScript (``.ts``, ``.mts``, ``.cts``).
ES modules and TypeScript are first compiled to CommonJS (:mod:`evalh.runtimes.typescript`). Without
``:fn`` the function is ``module.exports`` itself, else its ``default``. Files are read here, in Python,
before anything runs: the engine has no file or network access. ``require('./x')`` / ``import ... from
'./x'`` of a relative file inside the config's or the file's folder is served from the files read (found
as Node and TypeScript do: ``./x`` may be ``x.ts``, ``x.js``, ``x.json``, ``x/index.ts``...; ``./x.js``
written for TypeScript may be ``x.ts``); any other name (an npm package, a Node module such as ``fs``)
is refused with an error naming it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "JS_FILE_SUFFIXES",
    "JsSource",
    "file_source",
    "function_body",
    "inline_source",
    "split_js_target",
]

# What promptfoo loads as JavaScript wherever it takes a code file (providers, prompts, assertions,
# transforms, generators): CommonJS, ES modules and TypeScript. The one list every caller checks against.
JS_FILE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".mts", ".cts")
_TYPESCRIPT_SUFFIXES = (".ts", ".mts", ".cts")
_COMPILED_SUFFIXES = (".mjs", *_TYPESCRIPT_SUFFIXES)  # always compiled; .js only when it is an ES module
# A line that starts an ES module statement (`import x from`, `import {a}`, `import './x'`, `export
# default`, `export {`): cheap, so CommonJS files never wait for the compiler.
_ESM_STATEMENT = re.compile(
    r"""^[ \t]*(?:import\s*[{*'"]|import\s+[\w$]|export\s*[{*]|export\s+[\w$])""", re.M
)
_REQUIRE = re.compile(r"""\brequire\s*\(\s*(['"])([^'"\n]+)\1\s*\)""")
_DECLARATION = re.compile(r"^(const|let|var)\s")
# A line that can only be a statement: promptfoo runs a value with a line break as written, so
# `value: |` holding `throw new Error(...)` throws; `return throw ...` would be a syntax error.
_STATEMENT = re.compile(r"^(throw|if|for|while|do|switch|try)\b")
MAX_MODULES = 200  # a require graph larger than this is a mistake, not a grader


@dataclass(frozen=True)
class JsSource:
    """A program that defines ``__evalh_fn``; ``shown`` names it in messages (``checks.js``).

    ``definitions`` only compiles (a syntax check may evaluate it); ``start`` runs the user's top-level
    code (a file's module body) and is evaluated with the call's limits."""

    definitions: str
    shown: str
    start: str = ""
    line_offset: int = 0  # program lines before the user's first line (inline code)
    user_lines: int = 0  # how many lines the user's inline code has
    problems: tuple[str, ...] = field(default=())  # refused requires, found before anything runs


def function_body(code: str) -> str:
    """promptfoo's wrapping of inline code into the body of a function."""
    text = code.strip()
    if "\n" in text:
        return text
    if text.startswith("return ") or text.startswith("return;") or _STATEMENT.match(text):
        return text
    if _DECLARATION.match(text):
        statements = [part.strip() for part in text.rstrip(";").split(";") if part.strip()]
        if len(statements) > 1:
            return "; ".join(statements[:-1]) + f"; return {statements[-1]};"
        return text  # a lone declaration returns nothing; the caller reports it
    return f"return {text}"


def inline_source(code: str, params: tuple[str, ...] = ("output", "context")) -> JsSource:
    """Inline code as the body of ``function (<params>)``; its first line is the program's second."""
    program = f"var __evalh_fn = function ({', '.join(params)}) {{\n{function_body(code)}\n}};"
    lines = code.strip().count("\n") + 1
    return JsSource(definitions=program, shown="inline code", line_offset=1, user_lines=lines)


def split_js_target(value: str) -> tuple[str, str | None]:
    """``file://checks.js:grade`` -> ("checks.js", "grade"); without ``:fn``, None (module.exports)."""
    target = value.removeprefix("file://")
    path, sep, function = target.rpartition(":")
    if sep and path.endswith(JS_FILE_SUFFIXES) and function.isidentifier():
        return path, function
    return target, None


class JsFileProblem(Exception):
    """A JavaScript file that cannot be loaded (missing, not .js, outside the allowed folders)."""


@dataclass
class _Loader:
    roots: tuple[Path, ...]
    modules: dict[str, str] = field(default_factory=dict)  # resolved path -> source
    links: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> request -> path or "!msg"
    problems: list[str] = field(default_factory=list)

    def load(self, path: Path) -> None:
        key = str(path)
        if key in self.modules:
            return
        if len(self.modules) >= MAX_MODULES:
            raise JsFileProblem(f"{path.name}: more than {MAX_MODULES} files are required")
        try:
            source = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise JsFileProblem(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
        if path.suffix == ".json":
            self.modules[key] = f"module.exports = {source};"
            self.links[key] = {}
            return
        source = self._compiled(path, source)
        self.modules[key] = source
        self.links[key] = {}
        for match in _REQUIRE.finditer(source):
            self._link(path, match.group(2))

    def _compiled(self, path: Path, source: str) -> str:
        """TypeScript and ES modules as CommonJS; a CommonJS file as it is."""
        if not (
            path.suffix in _COMPILED_SUFFIXES or (path.suffix == ".js" and _ESM_STATEMENT.search(source))
        ):
            return source
        shown = path.relative_to(self.roots[0]) if path.is_relative_to(self.roots[0]) else path.name
        from evalh.runtimes.typescript import TranspileFailed, transpile  # its engine: only for such a file

        try:
            return transpile(source, path, str(shown))
        except TranspileFailed as error:
            raise JsFileProblem(str(error)) from None

    def _link(self, requirer: Path, request: str) -> None:
        links = self.links[str(requirer)]
        if request in links:
            return
        if not request.startswith(("./", "../")):
            kind = "Node module" if _is_node_builtin(request) else "npm package"
            message = (
                f"{requirer.name} requires the {kind} {request!r}, which evalh's JavaScript sandbox cannot "
                "load (no node_modules, no file or network access): inline the code it needs"
            )
            links[request] = "!" + message
            self.problems.append(message)
            return
        resolved = _resolve(requirer.parent / request, typescript=requirer.suffix in _TYPESCRIPT_SUFFIXES)
        if resolved is None or not any(resolved.is_relative_to(root) for root in self.roots):
            where = "was not found" if resolved is None else "lies outside the config's folder"
            message = f"{requirer.name} requires {request!r}, which {where}"
            links[request] = "!" + message
            self.problems.append(message)
            return
        links[request] = str(resolved)
        self.load(resolved)


_NODE_BUILTINS = frozenset(
    [
        "assert",
        "async_hooks",
        "buffer",
        "child_process",
        "cluster",
        "crypto",
        "dgram",
        "dns",
        "events",
        "fs",
        "http",
        "http2",
        "https",
        "inspector",
        "module",
        "net",
        "os",
        "path",
        "perf_hooks",
        "process",
        "querystring",
        "readline",
        "stream",
        "string_decoder",
        "timers",
        "tls",
        "tty",
        "url",
        "util",
        "v8",
        "vm",
        "worker_threads",
        "zlib",
    ]
)


def _is_node_builtin(name: str) -> bool:
    return name.startswith("node:") or name.split("/")[0] in _NODE_BUILTINS


# Node's order for a CommonJS or ES module requirer (the old .js/.cjs/.json first, so a file that worked
# before finds the same module), TypeScript's for a TypeScript one (`./x` is x.ts before x.js).
_JS_LOOKUP = (".js", ".cjs", ".json", ".mjs", ".ts", ".mts", ".cts")
_TS_LOOKUP = (".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json")
# TypeScript's rule: `import './x.js'` names the output of x.ts
_COMPILED_FROM = {".js": (".ts",), ".mjs": (".mts",), ".cjs": (".cts",)}


def _resolve(candidate: Path, *, typescript: bool) -> Path | None:
    """The file a relative request names: the file itself, then with an added suffix, then ``x.ts`` for
    ``x.js``, then a folder's index."""
    lookup = _TS_LOOKUP if typescript else _JS_LOOKUP
    index = ("index.ts", "index.js") if typescript else ("index.js", "index.ts")
    for path in (
        candidate,
        *(candidate.with_name(candidate.name + suffix) for suffix in lookup),
        *(candidate.with_suffix(suffix) for suffix in _COMPILED_FROM.get(candidate.suffix, ())),
        *(candidate / name for name in index),
    ):
        if path.is_file():
            return path.resolve()
    return None


def file_source(value: str, config_dir: Path | None, *, module_export: bool = False) -> JsSource:
    """The program for ``file://x.js[:fn]``: every module it requires, wrapped as CommonJS.

    With ``module_export`` the program defines ``__evalh_export`` instead of ``__evalh_fn``: the module's
    export itself (a class or an object, as a provider file exports), picked as promptfoo's
    ``importModule`` does (``default``, else the whole export; ``:name`` names one), for the caller's
    own glue to use. Raises JsFileProblem when the file itself cannot be used; refused requires are in
    ``problems`` (a ``require`` of them throws when it runs)."""
    shown, function = split_js_target(value)
    if not shown.endswith(JS_FILE_SUFFIXES):
        raise JsFileProblem(
            f"JavaScript files must end in one of {', '.join(JS_FILE_SUFFIXES)} (got {shown}): "
            "use module.exports = function (output, context) {...} or export default"
        )
    base = config_dir or Path.cwd()
    entry = (base / Path(shown).expanduser()).resolve()
    if not entry.is_file():
        raise JsFileProblem(f"JavaScript file {shown} was not found (looked in {base})")
    loader = _Loader(roots=(base.resolve(), entry.parent))
    loader.load(entry)
    definitions, start = _program(loader, str(entry), function)
    if module_export:
        start = _export_start(str(entry), function)
    return JsSource(
        definitions=definitions,
        start=start,
        shown=shown + (f":{function}" if function else ""),
        problems=tuple(loader.problems),
    )


def _program(loader: _Loader, entry: str, function: str | None) -> tuple[str, str]:
    """CommonJS in one script: each module a function of (module, exports, require, ...), run on demand."""
    wrapped = ",\n".join(
        f"{json.dumps(path)}: function (module, exports, require, __filename, __dirname) {{\n{source}\n}}"
        for path, source in loader.modules.items()
    )
    # promptfoo's importModule picks from an ES module its default export's default, else its default
    # export, else the module, and looks a named function up there; evalh also finds a named export
    # beside a default one (promptfoo fails on that). A CommonJS module is module.exports, as before.
    pick = """var mod = exported;
  if (exported && exported.__esModule) {
    var d = exported["default"];
    mod = (d && d["default"]) || d || exported;
  }
  """ + (
        f"var f = mod && typeof mod[{json.dumps(function)}] === 'function' ? mod[{json.dumps(function)}] "
        f": exported && exported[{json.dumps(function)}];"
        if function
        else "var f = typeof mod === 'function' ? mod : mod && mod.default;"
    )
    want = f"a function named {function}" if function else "a function (module.exports = ...)"
    definitions = f"""var __evalh_modules = {{
{wrapped}
}};
var __evalh_links = {json.dumps(loader.links)};
var __evalh_loaded = {{}};
function __evalh_require(path) {{
  if (__evalh_loaded[path]) return __evalh_loaded[path].exports;
  var module = {{exports: {{}}}};
  __evalh_loaded[path] = module;
  var links = __evalh_links[path];
  var require = function (request) {{
    var target = links[request];
    if (target === undefined) throw new Error("require(" + JSON.stringify(request) +
      "): evalh only loads relative files named by a literal string in require('./...')");
    if (target.charAt(0) === "!") throw new Error(target.slice(1));
    return __evalh_require(target);
  }};
  var dir = path.slice(0, path.lastIndexOf("/"));
  __evalh_modules[path](module, module.exports, require, path, dir);
  return module.exports;
}}"""
    start = f"""var __evalh_fn = (function () {{
  var exported = __evalh_require({json.dumps(entry)});
  {pick}
  if (typeof f !== "function") throw new Error({json.dumps(Path(entry).name)} + " does not export " +
    {json.dumps(want)});
  return f;
}})();"""
    return definitions, start


def _export_start(entry: str, name: str | None) -> str:
    """``__evalh_export``: the entry module's export (``default`` first, as an ES module's), or ``name``."""
    pick = f"exported && exported[{json.dumps(name)}]" if name else "exported && exported.default || exported"
    return f"""var __evalh_export = (function () {{
  var exported = __evalh_require({json.dumps(entry)});
  return {pick};
}})();"""
