"""The generic HTTP provider: test your own application's endpoint.

``http`` / ``https`` with ``config.url``, or the URL as the id (``http://localhost:8000/chat``)::

    config:
      method: POST                       # default POST (GET sends no body)
      headers: {Authorization: "Bearer {{ env.MY_TOKEN }}", X-User: "{{ user_id }}"}
      body: {question: "{{prompt}}", user: "{{ user_id }}"}   # any JSON value, or a string
      queryParams: {q: "{{prompt}}"}
      responsePath: data.answer[0].text   # where the output is in the JSON reply (default: the whole reply)

Strings in ``body``, ``queryParams``, ``headers`` and ``config.url`` are templates over ``prompt``, the
test's vars (also as ``vars.x``) and ``env``, rendered once per call (promptfoo renders headers with the
vars too) in evalh's one sandboxed environment (the
prompt and the vars are data in them, never rendered again). A string that is exactly ``{{prompt}}`` is
replaced by the prompt itself, so a chat message list stays a JSON list. A URL given as the provider's
id is used as written (its ``{{ env.X }}`` was rendered when the config was loaded). Replies are not
cached unless ``config.cache: true`` (your app changes between runs; a model with fixed settings does
not). A secret-looking header's rendered value (``Authorization``, ``X-Api-Key``...) is redacted from
every message and report; a rendered header value may not hold a line break (a var cannot add headers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from evalh.errors import ConfigError, ProviderError, TemplateError
from evalh.model import ProviderResponse, ProviderSpec, Usage
from evalh.providers.base import CallContext
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.identity import caches_answers, hide_secrets, request_identity
from evalh.secrets import register_config, register_headers
from evalh.templating import has_template, referenced_names, render_template, template_strings

__all__ = ["WebHttpProvider", "extract_path", "make_http"]

_WHOLE_PROMPT = re.compile(r"^\{\{\s*prompt\s*\}\}$")
_PATH_TOKEN = re.compile(r"[^.\[\]]+|\[(\d+)\]")
_MISSING = object()

_TEMPLATE_KEYS = ("url", "body", "queryParams", "headers")


def extract_path(payload: Any, path: str) -> Any:
    """``data.items[0].text`` (also ``data.items.0.text``, a leading ``$.`` or ``json.``) in ``payload``;
    raises KeyError naming the missing step."""
    for prefix in ("$.", "json."):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    current = payload
    for match in _PATH_TOKEN.finditer(path):
        step = match.group(1) if match.group(1) is not None else match.group(0)
        current = _step(current, step)
        if current is _MISSING:
            raise KeyError(step)
    return current


def _step(current: Any, step: str) -> Any:
    if isinstance(current, Mapping):
        return current.get(step, _MISSING)
    if isinstance(current, list) and step.lstrip("-").isdigit():
        index = int(step)
        return current[index] if -len(current) <= index < len(current) else _MISSING
    return _MISSING


def _prompt_text(prompt: str | Sequence[Mapping[str, Any]]) -> str:
    return prompt if isinstance(prompt, str) else json.dumps([dict(m) for m in prompt], ensure_ascii=False)


def render_value(
    template: Any,
    prompt: str | Sequence[Mapping[str, Any]],
    variables: Mapping[str, Any],
    where: str = "body",
) -> Any:
    """Render every string in ``template`` (nested dicts and lists too) once."""
    if isinstance(template, str):
        if _WHOLE_PROMPT.match(template.strip()):
            return prompt if isinstance(prompt, str) else [dict(m) for m in prompt]
        scope = {**variables, "vars": variables, "prompt": _prompt_text(prompt)}
        return render_template(template, scope, where=where)
    if isinstance(template, Mapping):
        return {key: render_value(value, prompt, variables, where) for key, value in template.items()}
    if isinstance(template, list | tuple):
        return [render_value(item, prompt, variables, where) for item in template]
    return template


def _check_templates(spec: ProviderSpec) -> None:
    """Parse the request templates before the first call: a syntax error, or a template the
    sandbox refuses, is a config error rather than one failed row per test."""
    for key in _TEMPLATE_KEYS:
        where = f"{spec.path}.config.{key}" if spec.path else f"config.{key}"
        for text in template_strings(spec.config.get(key)):
            referenced_names(text, where=where)


class WebHttpProvider:
    """One HTTP endpoint of the user's application."""

    def __init__(self, spec: ProviderSpec, *, url: str, http: HttpClient) -> None:
        self.id = spec.id
        self.spec = spec
        self.config: Mapping[str, Any] = spec.config
        self.url = url
        self.method = str(self.config.get("method") or "POST").upper()
        self.http = http
        self._timeout_in_config = any(self.config.get(k) is not None for k in ("timeout", "timeoutMs"))
        configured = self.config.get("headers") or {}
        # the headers with a template, rendered for each call (the client sends the others as written)
        self._header_templates = {
            str(name): str(value) for name, value in configured.items() if has_template(str(value))
        }

    @property
    def cacheable(self) -> bool:
        return caches_answers(self.config, by_default=False)

    def cache_identity(self) -> Mapping[str, Any]:
        # Everything that shapes the request; secrets (URL, headers, secret-named body fields) as Secret.
        templates = {key: self.config.get(key) for key in ("body", "queryParams", "responsePath")}
        return {
            "id": request_identity(self.id, {})["url"] if "://" in self.id else self.id,
            **request_identity(self.url, self.http.headers),
            "method": self.method,
            "templates": hide_secrets(templates),
        }

    def request_shape(
        self, prompt: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        """This call's request as rendered (URL, headers, body), secrets as Secret, for its cache key:
        the vars and ``{{ env.X }}`` values its templates read shape it as the prompt does. None when
        it does not render (the call then fails with that error, and nothing is cached)."""
        try:
            url, body, content, headers = self._render_request(prompt, variables)
        except TemplateError:
            return None
        return {**request_identity(url, headers), "body": hide_secrets(body) if content is None else content}

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext | None = None
    ) -> ProviderResponse:
        variables = dict(context.vars) if context else {}
        try:
            url, body, content, headers = self._render_request(prompt, variables)
        except TemplateError as error:
            return ProviderResponse(error=f"{self.id}: could not render the request: {error}")
        timeout = None if self._timeout_in_config or context is None else context.timeout_s
        if context is not None and context.trace is not None:  # W3C trace context, for the app's spans
            headers = {"traceparent": context.trace.traceparent, **headers}
        try:
            reply = await self.http.request(
                self.method, url, body=body, content=content, headers=headers, timeout_s=timeout
            )
        except ProviderError as error:
            attempts = getattr(error, "attempts", 1)
            # str() is the rendered message, already redacted by the HTTP layer (evalh.providers.http)
            return ProviderResponse(error=str(error), metadata={"attempts": attempts})
        return self._response(reply)

    def _render_request(
        self, prompt: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
    ) -> tuple[str, Any, str | None, dict[str, str]]:
        url = self.url
        if self.config.get("url"):
            url = str(render_value(self.url, prompt, variables, "config.url"))
        params = self.config.get("queryParams")
        if params:
            params = render_value(params, prompt, variables, "config.queryParams")
            url += ("&" if "?" in url else "?") + urlencode({k: str(v) for k, v in params.items()})
        headers = self._render_headers(prompt, variables)
        if self.method == "GET":
            register_config({"url": url, "queryParams": params})
            return url, None, None, headers
        body = render_value(
            self.config.get("body", {"prompt": "{{prompt}}"}), prompt, variables, "config.body"
        )
        # {{ env.X }} in these templates is only known now: secret-named fields join the redaction list
        register_config({"url": url, "queryParams": params, "body": body})
        if not isinstance(body, str):
            return url, body, None, headers
        try:
            json.loads(body)
            headers["Content-Type"] = "application/json"
        except ValueError:
            headers["Content-Type"] = "text/plain; charset=utf-8"
        return url, None, body, headers

    def _render_headers(
        self, prompt: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
    ) -> dict[str, str]:
        """``config.headers``' templates rendered for this call; secret-looking values registered for
        redaction before anything can quote them."""
        headers: dict[str, str] = {}
        for name, template in self._header_templates.items():
            value = render_value(template, prompt, variables, f"config.headers.{name}")
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if any(mark in text for mark in "\r\n\0"):
                register_headers({name: text})
                raise TemplateError(
                    f"header {name} renders to a value with a line break",
                    where=f"config.headers.{name}",
                    hint="A header is one line: take the line breaks out of the vars it uses",
                )
            headers[name] = text
        register_headers(headers)
        return headers

    def _response(self, reply: HttpReply) -> ProviderResponse:
        metadata = {"attempts": reply.attempts, "status": reply.status}
        try:
            output = self._output(reply)
        except LookupError as error:
            snippet = self.http.excerpt(reply.text)
            return ProviderResponse(
                error=f"{self.id}: {error.args[0]}: {snippet}", latency_ms=reply.latency_ms, metadata=metadata
            )
        return ProviderResponse(
            output=output,
            usage=Usage(requests=1, latency_ms=reply.latency_ms),
            latency_ms=reply.latency_ms,
            cost=0.0,
            metadata=metadata,
        )

    def _output(self, reply: HttpReply) -> Any:
        """The reply's JSON at ``responsePath`` (or the whole JSON, or the text); LookupError if absent."""
        path = self.config.get("responsePath")
        if not path:
            return reply.json if reply.json is not None else reply.text
        if reply.json is None:
            raise LookupError(f"responsePath {path!r} needs a JSON reply, got")
        try:
            return extract_path(reply.json, str(path))
        except KeyError as error:
            raise LookupError(f"responsePath {path!r}: no {error.args[0]!r} in the reply") from None

    async def aclose(self) -> None:
        await self.http.aclose()


def make_http(spec: ProviderSpec) -> WebHttpProvider:
    config = spec.config
    url = str(config.get("url") or (spec.id if "://" in spec.id else ""))
    if not url:
        raise ConfigError(
            f"the {spec.id} provider needs a url",
            where=f"{spec.path}.config.url" if spec.path else None,
            hint="Set config.url, or use the URL itself as the provider id (http://localhost:8000/chat).",
        )
    _check_templates(spec)
    # Header values whose names look secret are redacted from every message by the client.
    return WebHttpProvider(spec, url=url, http=HttpClient.for_spec(spec, base_url=url))
