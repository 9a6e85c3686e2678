"""JavaScript providers: promptfoo's ``file://provider.js`` (or a bare ``./provider.js``), in the embedded
engine.

The file exports a class, as promptfoo's custom providers do (``module.exports = class { id() {...}
async callApi(prompt, context, options) {...} }``, or ``export default class`` once the loader reads ES
modules and TypeScript), or an object with those methods. It is built as promptfoo builds it:
``new Export({id, config: {...config, basePath}, env})``, once per engine thread (so at most
``MAX_THREADS`` instances live in a run, each keeping its own state), and ``callApi`` is called per row
with the rendered prompt, a context ``{vars, prompt: {label}, test, traceparent?}`` and ``{}``; a promise
is awaited. The reply is promptfoo's ``ProviderResponse`` (``{output, error, tokenUsage, cost, ...}``),
decoded as a Python provider's reply is. ``callEmbeddingApi(text)`` makes it an embedding provider.

The engine has no network, files or Node: ``fetch`` throws a message saying so, and ``require`` of an
npm package or a Node module is a config error at load. A call has the scripts' deadline
(``config.timeout`` / ``timeoutMs``, else ``evaluateOptions.timeoutMs``, else 300 s). Its answers are
never cached, as a Python provider's.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalh.common.deadlines import PROVIDER_SCRIPT_TIMEOUT_S, call_timeout_s
from evalh.errors import ConfigError, ProviderError
from evalh.model import ProviderResponse, ProviderSpec
from evalh.providers.base import CallContext, Embeddings
from evalh.providers.scripts import context_json, embeddings_from, prompt_text, script_reply
from evalh.runtimes.javascript_source import JsFileProblem, JsSource, file_source, split_js_target

# evalh.runtimes.javascript (the engine) is imported where a JavaScript provider is checked or called:
# a config without one (every config imports this module) never loads it.

__all__ = [
    "NO_NETWORK",
    "JavaScriptProvider",
    "javascript_provider_problem",
    "make_javascript",
    "self_named",
]

# CPU seconds for building the provider once at load to read its id() and label: a constructor that
# needs longer is left to the calls, which have the scripts' deadline
_NAMING_TIMEOUT_S = 5.0
_NAMING = """(function (p) {
  var id = typeof p.id === "function" ? p.id() : p.id;
  return {id: typeof id === "string" ? id : null, label: typeof p.label === "string" ? p.label : null};
})(__evalh_provider)"""
NO_NETWORK = (
    "evalh runs JavaScript providers in an embedded engine without network, files or Node modules: "
    "call your model from a Python provider (file://provider.py), the http provider or exec:<command>"
)

# Evaluated before the module's own top-level code, which may call fetch too
_PRELUDE = "var fetch = function () { throw new Error(%s); };"
# Evaluated after it: builds the provider once for this engine context (promptfoo:
# `new (await importModule(path))({...options, id})`) and serves each call by method name.
_GLUE = """
var __evalh_provider = (function (Export, options) {
  if (typeof Export === "function" && !Export.prototype) {
    throw new Error(%(shown)s + " exports a function that cannot be built with new (an arrow or async " +
      "function): export a class, e.g. module.exports = class { async callApi(prompt) {...} }");
  }
  if (typeof Export === "function") {
    try { return new Export(options); } catch (e) {
      throw new Error("its constructor threw " +
        (e && e.message !== undefined ? (e.name || "Error") + ": " + e.message : String(e)));
    }
  }
  if (Export && typeof Export === "object") return Export;
  throw new Error(%(shown)s + " exports " + (Export === undefined ? "nothing" : "a " + typeof Export) +
    ", not a provider: export a class with a callApi method (module.exports = class {...})");
})(__evalh_export, %(options)s);
var __evalh_fn = function (method, args) {
  var provider = __evalh_provider;
  if (method === "id") return typeof provider.id === "function" ? provider.id() : provider.id;
  var call = provider[method];
  if (typeof call !== "function") throw new Error("the provider has no " + method + " method");
  if (method === "callEmbeddingApi") {
    return Promise.all(args[0].map(function (text) { return call.call(provider, text); }));
  }
  return call.apply(provider, args);
};
"""


def _module(spec: ProviderSpec) -> JsSource:
    """The provider file and everything it requires; ConfigError (at the provider) when unusable."""
    where = spec.path or None
    try:
        source = file_source(spec.id, Path(spec.base_dir) if spec.base_dir else None, module_export=True)
    except JsFileProblem as error:
        raise ConfigError(str(error), where=where, hint="Check the path (relative to the config)") from None
    from evalh.runtimes.javascript import syntax_problem

    problem = source.problems[0] if source.problems else syntax_problem(source)
    if problem is not None:
        hint = NO_NETWORK if source.problems else "Fix the file; `node --check` shows the same error"
        raise ConfigError(f"JavaScript provider {problem}", where=where, hint=hint)
    return source


def _provider_source(spec: ProviderSpec) -> JsSource:
    """The file's program followed by the glue that builds the provider with promptfoo's options."""
    module = _module(spec)
    base = Path(spec.base_dir or ".").resolve()
    options = {"id": spec.id, "config": {**spec.config, "basePath": str(base)}, "env": {}}
    glue = _GLUE % {
        "shown": json.dumps(module.shown),
        "options": json.dumps(options, ensure_ascii=False, default=str),
    }
    prelude = _PRELUDE % json.dumps(NO_NETWORK)
    return dataclasses.replace(module, start=f"{prelude}\n{module.start}\n{glue}")


def self_named(spec: ProviderSpec) -> ProviderSpec:
    """``spec`` with the id and label its provider gives itself, as promptfoo's reports show them: the
    instance's ``id()`` (when it differs from the file's id) and its ``label`` (which wins over the
    config's, as promptfoo's ``label ||= options.label``). Builds the provider once, in a fresh engine
    context; a provider that cannot be built or named keeps ``spec`` (its calls report why)."""
    from evalh.runtimes.javascript import JsFailed, TimedOut, evaluate_once

    try:
        named = evaluate_once(_provider_source(spec), _NAMING, timeout_s=_NAMING_TIMEOUT_S).value
    except (ConfigError, JsFailed, TimedOut):
        return spec
    own_id, label = named.get("id"), named.get("label")
    return dataclasses.replace(
        spec,
        named_id=own_id if own_id and own_id != spec.id else spec.named_id,
        label=label or spec.label,
    )


def javascript_provider_problem(spec: ProviderSpec) -> ConfigError | None:
    """What makes ``spec``'s file unusable (missing, a refused require, a syntax error), found without
    running any of its code; None when it may run."""
    try:
        _module(spec)
    except ConfigError as error:
        return error
    return None


class JavaScriptProvider:
    """A promptfoo custom provider file, run in the embedded JavaScript engine."""

    cacheable = False  # as a Python provider: user code has no identity to key a cache on
    batch_size = 64

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id
        self.spec = spec
        self.source = _provider_source(spec)
        self.name = self.source.shown
        base = Path(spec.base_dir or ".").resolve()
        self.path = base / split_js_target(spec.id)[0]
        call_timeout_s(spec.config, None, PROVIDER_SCRIPT_TIMEOUT_S, where=spec.path or spec.id)

    def cache_identity(self) -> Mapping[str, Any]:
        mtime = self.path.stat().st_mtime if self.path.is_file() else None
        return {"id": self.id, "file": str(self.path), "mtime": mtime}

    async def _call(self, method: str, args: Sequence[Any], run_timeout_s: float | None) -> Any:
        """What the method returned (promises awaited); ProviderError, naming the file, otherwise."""
        timeout = call_timeout_s(self.spec.config, run_timeout_s, PROVIDER_SCRIPT_TIMEOUT_S)
        from evalh.runtimes.javascript import JsFailed, JsThrown, TimedOut, call_javascript

        try:
            outcome = await call_javascript(self.source, [method, list(args)], timeout_s=timeout)
        except TimedOut as error:
            raise ProviderError(
                f"{self.name}: {method} {error} and was stopped (raise config.timeoutMs to allow longer)"
            ) from None
        except JsFailed as error:
            reason = str(error).removeprefix("Error: ")
            raise ProviderError(f"{self.name}: the provider could not be set up: {reason}") from None
        if isinstance(outcome, JsThrown):
            raise ProviderError(f"{self.name}: {method} threw {outcome.message}{_hint(outcome.message)}")
        if outcome.type_name in ("function", "symbol", "bigint", "undefined"):
            raise ProviderError(
                f"{self.name}: {method} returned {outcome.type_name}, not {{output: ...}} or a string"
            )
        return outcome.value

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        started = time.perf_counter()
        try:
            args: tuple[Any, ...] = (prompt_text(prompt), _context(context), {})
            result = await self._call("callApi", args, context.timeout_s)
        except ProviderError as error:
            return ProviderResponse(error=error.render())
        response = script_reply(result, self.name)
        return dataclasses.replace(response, latency_ms=(time.perf_counter() - started) * 1000)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        results = await self._call("callEmbeddingApi", (list(texts),), None)
        if not isinstance(results, list) or len(results) != len(texts):
            raise ProviderError(f"{self.name}: callEmbeddingApi returned no vector for some texts")
        return embeddings_from(results, f"{self.name}: callEmbeddingApi")


def _hint(thrown: str) -> str:
    """What to do about a throw that says the sandbox lacks Node's globals (``process.env``...)."""
    if re.search(r"\b(process|Buffer|setTimeout|setInterval|XMLHttpRequest)'? is not defined", thrown):
        return f" (the engine has no Node globals; pass values in the provider's config. {NO_NETWORK})"
    return ""


def _context(context: CallContext) -> dict[str, Any]:
    """promptfoo's ``callApi`` context as plain data: vars, the prompt's label, the test."""
    made = context_json(context)
    made["prompt"] = {"label": context.prompt_label}
    test = context.test
    if test is not None:
        made["test"] = {
            "vars": dict(test.vars),
            "description": test.description,
            "metadata": dict(test.metadata),
            "options": dict(test.options),
        }
    return made


def make_javascript(spec: ProviderSpec) -> JavaScriptProvider:
    return JavaScriptProvider(spec)
