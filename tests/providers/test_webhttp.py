"""The generic http provider against a loopback 'application' endpoint."""

from __future__ import annotations

import pytest

from evalh.common.notices import warnings_to
from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.registry import build_provider
from evalh.providers.webhttp import extract_path
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once


def test_body_template_vars_headers_and_response_path(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/chat", lambda r: Reply.json({"data": {"answers": [{"text": "42"}]}}))
    config = {
        "url": loopback.url + "/chat",
        "headers": {"Authorization": f"Bearer {SECRET}"},
        "body": {"question": "{{prompt}}", "user": "{{ user_id }}", "meta": {"lang": "{{ vars.lang }}"}},
        "responsePath": "data.answers[0].text",
    }
    context = CallContext(vars={"user_id": "u-7", "lang": "en"})
    _, response = complete_once("http", config, "What is the answer?", context)
    assert response.error is None
    assert response.output == "42"
    request = loopback.requests[0]
    assert request.json == {"question": "What is the answer?", "user": "u-7", "meta": {"lang": "en"}}
    assert request.header("Authorization") == f"Bearer {SECRET}"


def test_url_as_id_default_body_and_whole_reply(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/api", lambda r: Reply.json({"reply": r.json}))
    _, response = complete_once(loopback.url + "/api", {}, "hi")
    assert response.output == {"reply": {"prompt": "hi"}}


def test_chat_prompt_stays_a_list_and_string_body(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/chat", lambda r: Reply(body=b"plain answer"))
    messages = [{"role": "user", "content": "Hi"}]
    _, response = complete_once(
        "http", {"url": loopback.url + "/chat", "body": {"messages": "{{ prompt }}"}}, messages
    )
    assert loopback.requests[0].json == {"messages": messages}
    assert response.output == "plain answer"
    loopback.requests.clear()
    string_body = '{"q": {{ prompt | dump }}}'
    complete_once("http", {"url": loopback.url + "/chat", "body": string_body}, 'say "hi"')
    assert loopback.requests[0].json == {"q": 'say "hi"'}
    assert loopback.requests[0].header("Content-Type") == "application/json"


def test_get_with_query_params(loopback: LoopbackServer) -> None:
    loopback.route("GET", "/search", lambda r: Reply.json({"path": r.path}))
    config = {
        "url": loopback.url + "/search",
        "method": "GET",
        "queryParams": {"q": "{{prompt}}"},
        "responsePath": "path",
    }
    _, response = complete_once("http", config, "a b&c")
    assert response.output == "/search?q=a+b%26c"


def test_missing_response_path_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/chat", lambda r: Reply.json({"data": {}}))
    _, response = complete_once("http", {"url": loopback.url + "/chat", "responsePath": "data.answer"})
    assert response.error is not None and "no 'answer' in the reply" in response.error


def test_server_error_redacts_the_auth_header(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/chat", lambda r: Reply.json({"error": f"token {SECRET} expired"}, status=401))
    config = {"url": loopback.url + "/chat", "headers": {"Authorization": f"Bearer {SECRET}"}}
    _, response = complete_once("http", config)
    assert response.error is not None and "token [REDACTED] expired" in response.error
    assert SECRET not in response.error


def test_a_key_in_a_url_id_is_redacted_from_errors(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/chat", lambda r: Reply.json({"error": f"bad key {SECRET}"}, status=403))
    host = loopback.url.removeprefix("http://")
    _, response = complete_once(f"http://me:{SECRET}@{host}/chat?api_key={SECRET}&lang=en", {})
    assert response.error is not None and "bad key [REDACTED]" in response.error
    assert SECRET not in response.error
    assert loopback.requests_to("/chat")[0].path.endswith(f"api_key={SECRET}&lang=en")  # still sent


def test_undefined_template_variable_is_an_error_under_strict(loopback: LoopbackServer) -> None:
    with warnings_to(None, strict=True):  # else it renders empty, with a warning, as in promptfoo
        _, response = complete_once("http", {"url": loopback.url + "/chat", "body": {"q": "{{ nope }}"}})
    assert response.error is not None and "nope" in response.error
    assert loopback.requests == []


def test_not_cached_unless_asked() -> None:
    assert build_provider(ProviderSpec(id="http://h/x")).cacheable is False
    assert build_provider(ProviderSpec(id="http://h/x", config={"cache": True})).cacheable is True


def test_http_without_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs a url"):
        build_provider(ProviderSpec(id="http", path="providers[0]"))


def test_extract_path_forms() -> None:
    payload = {"a": [{"b": 1}, {"b": 2}]}
    assert extract_path(payload, "a[1].b") == 2
    assert extract_path(payload, "$.a.0.b") == 1
    assert extract_path(payload, "a[-1].b") == 2
    with pytest.raises(KeyError):
        extract_path(payload, "a[5]")
