"""evalh.secrets: what a secret is, URL scrubbing, config copies and value-based redaction."""

from __future__ import annotations

import base64
import io
import json
import sys
from urllib.parse import quote

import pytest

from evalh.errors import ConfigError
from evalh.secrets import (
    MARKER,
    MIN_VALUE_LENGTH,
    is_secret_key,
    redact_bytes,
    redact_config,
    redact_text,
    redact_value,
    redacted_stdio,
    register,
    register_config,
    register_headers,
    register_url,
    registered,
    scrub_url,
    url_secrets,
)

SECRET_NAMES = [
    "apiKey",
    "api_key",
    "api-key",
    "x-api-key",
    "X-API-KEY",
    "OPENAI_API_KEY",
    "apikey",
    "Authorization",
    "Proxy-Authorization",
    "X-Env-Auth",
    "authToken",
    "accessToken",
    "accesstoken",
    "refresh_token",
    "sessionToken",
    "session",
    "SESSION_ID",
    "token",
    "secret",
    "client_secret",
    "password",
    "dbPassword",
    "passwd",
    "sig",
    "signature",
    "X-Signature",
    "Cookie",
    "Set-Cookie",
    "credentials",
    "aws_secret_access_key",
    "privateKey",
    "Ocp-Apim-Subscription-Key",
    "key",
    "jwt",
    "X-Custom-JWT",
    "idJwt",
]
HARMLESS_NAMES = [
    "max_tokens",
    "maxTokens",
    "max_completion_tokens",
    "tokens",
    "keywords",
    "monkey",
    "author",
    "authors",
    "passthrough",
    "pass",
    "tokenizer",
    "apiKeyEnvar",
    "token_limit",
    "keys",
    "temperature",
    "X-Trace",
    "model",
    "responsePath",
    "organization",
    "apiBaseUrl",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_harmless_names(name: str) -> None:
    assert not is_secret_key(name)


def test_scrub_url_hides_the_password_and_secret_query_values_only() -> None:
    url = "https://user:hunter2pass@api.example:8443/v1/ask?model=m&token=tok123456&sig=abcdef#top"
    assert (
        scrub_url(url)
        == f"https://user:{MARKER}@api.example:8443/v1/ask?model=m&token={MARKER}&sig={MARKER}#top"
    )
    assert scrub_url("https://ghp_tokenonly@github.example/x") == f"https://{MARKER}@github.example/x"
    plain = "http://localhost:8000/chat?q=a+b&model=x"
    assert scrub_url(plain) == plain  # nothing to hide: untouched, byte for byte


def test_url_secrets_include_the_basic_pair() -> None:
    found = url_secrets("http://alice:p%40ss-word-9@h/x?api_key=k-123456&q=1")
    assert found == ["p@ss-word-9", "alice:p@ss-word-9", "k-123456"]


def test_redact_config_by_name_env_map_headers_body_and_urls() -> None:
    config = {
        "env": {"PLAIN_LOOKING": "value-1234", "DEBUG": True},
        "providers": [
            {
                "id": "https://bob:pw-abcdef@app.example/ask?key=qk-998877&model=a",
                "config": {
                    "apiKey": "sk-1",
                    "apiKeyEnvar": "MY_KEY",
                    "max_tokens": 100,
                    "headers": {"X-Env-Auth": "e-1", "X-Trace": "t"},
                    "body": {"client_secret": "c-1", "question": "{{prompt}}"},
                    "organization": "org-1",
                },
            }
        ],
        "defaultTest": {"options": {"sessionToken": "s-1", "provider": "fake"}},
        "flags": {"private": False},
    }
    copy = redact_config(config)
    provider = copy["providers"][0]
    assert copy["env"] == {"PLAIN_LOOKING": MARKER, "DEBUG": True}
    assert provider["id"] == f"https://bob:{MARKER}@app.example/ask?key={MARKER}&model=a"
    assert provider["config"] == {
        "apiKey": MARKER,
        "apiKeyEnvar": "MY_KEY",
        "max_tokens": 100,
        "headers": {"X-Env-Auth": MARKER, "X-Trace": "t"},
        "body": {"client_secret": MARKER, "question": "{{prompt}}"},
        "organization": "org-1",
    }
    assert copy["defaultTest"]["options"] == {"sessionToken": MARKER, "provider": "fake"}
    assert copy["flags"] == {"private": False}  # a boolean is never a secret
    assert config["providers"][0]["config"]["apiKey"] == "sk-1"  # a copy


def test_redact_config_shares_what_has_nothing_to_redact() -> None:
    tests = [{"vars": {"q": "hi"}, "assert": [{"type": "contains-any", "value": ["a", "b"]}]}]
    providers = [{"id": "echo", "config": {"apiKey": "k-1"}}]
    config = {"prompts": ["{{q}}"], "tests": tests, "providers": providers}
    shown = redact_config(config)
    assert shown is not config and shown["providers"][0]["config"] == {"apiKey": MARKER}
    assert shown["tests"] is tests and shown["prompts"] is config["prompts"]  # not copied
    assert config["providers"][0]["config"]["apiKey"] == "k-1"
    assert redact_config(tests) is tests


@pytest.mark.parametrize("registered_value", [False, True])
def test_redact_config_edge_values_in_mappings_and_lists(registered_value: bool) -> None:
    """Every kind of value under every kind of key, with and without a registered secret (the walk
    takes a shorter way for strings and plain values in both cases)."""
    if registered_value:
        register("sk-listed-998877")
    config = {
        "apiKey": "",  # an empty secret stays empty
        "token": None,
        "password": False,
        "secret": 0,  # a number under a secret name is a secret
        "credentials": ["a", "b"],
        "key": {"nested": "x"},
        "env": {"A": "", "B": "x", "C": None},
        7: "a key that is not a string",
        "urls": ("https://u:pw-55@h/x?sig=abc", 1, None, {"apiKey": "z"}, "sk-listed-998877 in text"),
        "plain": ["a", 2, 3.5, True, None],
        "apiKeyEnvar": "MY_KEY",
    }
    shown = redact_config(config)
    value = "[REDACTED] in text" if registered_value else "sk-listed-998877 in text"
    assert shown == {
        "apiKey": "",
        "token": None,
        "password": False,
        "secret": MARKER,
        "credentials": MARKER,
        "key": MARKER,
        "env": {"A": "", "B": MARKER, "C": None},
        "7": "a key that is not a string",
        "urls": [f"https://u:{MARKER}@h/x?sig={MARKER}", 1, None, {"apiKey": MARKER}, value],
        "plain": ["a", 2, 3.5, True, None],
        "apiKeyEnvar": "MY_KEY",
    }
    assert shown["plain"] is config["plain"]  # nothing to redact: shared, not copied
    assert redact_config(("a", "b")) == ["a", "b"] and redact_config(["https://x.y/"]) == ["https://x.y/"]


def test_registered_values_and_their_derived_forms_are_redacted() -> None:
    register("sk-live-0123456789")
    register_url("http://alice:PASSWORD-X@h/x")
    basic = base64.b64encode(b"alice:PASSWORD-X").decode()
    b64 = base64.b64encode(b"sk-live-0123456789").decode()
    text = f"key sk-live-0123456789; Basic {basic}; b64 {b64}; url {quote('alice:PASSWORD-X', safe='')}"
    assert redact_text(text) == f"key {MARKER}; Basic {MARKER}; b64 {MARKER}; url {MARKER}"
    assert redact_bytes(text.encode()) == redact_text(text).encode()


def test_a_value_with_a_quote_and_an_accent_is_redacted_from_json_text_either_way() -> None:
    # the reports and the run store write JSON with non-ASCII kept as it is: there, the value's escaped
    # form is not json.dumps' (which escapes the accent too), and both must be found
    secret = 'pä"ss\\wörd\t-1234'
    register(secret)
    for ascii_only in (True, False):
        text = json.dumps({"q": f"uses {secret}!"}, ensure_ascii=ascii_only)
        assert json.loads(redact_text(text)) == {"q": f"uses {MARKER}!"}


def test_basic_and_bearer_header_values_register_their_tokens() -> None:
    token = base64.b64encode(b"carol:s3cr3t-pw").decode()
    register_headers({"Authorization": f"Basic {token}", "X-Trace": "trace-value-1"})
    assert redact_text(f"{token} carol:s3cr3t-pw s3cr3t-pw trace-value-1") == (
        f"{MARKER} {MARKER} {MARKER} trace-value-1"
    )


def test_short_values_are_not_registered_but_still_redacted_by_name() -> None:
    register("abc", "x" * (MIN_VALUE_LENGTH - 1))
    assert registered() == frozenset()
    assert redact_text("abc abc") == "abc abc"
    assert redact_config({"password": "abc"}) == {"password": MARKER}


def test_register_config_takes_secret_places_only() -> None:
    register_config(
        {
            "vars": {"question": "what-is-visible"},
            "providers": [{"config": {"apiKey": "sk-config-1", "headers": {"X-Env-Auth": "auth-env-7"}}}],
            "auth": {"nested": ["list-secret-1"]},
            "url": "https://u:pw-in-url-3@h/",
        }
    )
    text = "what-is-visible sk-config-1 auth-env-7 list-secret-1 pw-in-url-3"
    assert redact_text(text) == f"what-is-visible {MARKER} {MARKER} {MARKER} {MARKER}"


def test_the_longest_value_wins_and_values_in_structures() -> None:
    register("secret-abc", "secret-abcdef")
    assert redact_text("secret-abcdef!") == f"{MARKER}!"
    assert redact_value({"a": ["x secret-abc"], "secret-abc": 1}) == {"a": [f"x {MARKER}"], MARKER: 1}


def test_errors_and_stdio_are_redacted() -> None:
    register("sk-error-path-42")
    error = ConfigError("bad value sk-error-path-42", where="https://u:pw-1234567@h/?token=t")
    assert "sk-error-path-42" not in error.render() and "pw-1234567" not in error.render()
    captured = io.StringIO()
    saved = sys.stdout
    sys.stdout = captured
    try:
        with redacted_stdio():
            print("printed sk-error-path-42")
    finally:
        sys.stdout = saved
    assert captured.getvalue() == f"printed {MARKER}\n"


def test_redaction_skips_only_texts_that_hold_no_form() -> None:
    """A text is left as it is only when it holds no registered form: forms that contain another form
    (``Bearer <key>`` holds the key, padded base64 the unpadded one), a form shorter than the others,
    and texts as short as the shortest form are still redacted, longest form first."""
    key = "sk-guard-7"
    register(key)
    register_headers({"Authorization": f"Bearer {key}"})
    padded = base64.b64encode(key.encode()).decode()
    assert padded.endswith("=")  # its unpadded form is registered too, and is a part of it
    forms = sorted(registered(), key=len, reverse=True)

    def every_form_replaced(text: str) -> str:
        for form in forms:
            text = text.replace(form, MARKER)
        return text

    texts = [
        key,
        key[:-1],
        f"Bearer {key}",
        f"Bearer%20{key}!",
        f"x{padded}",
        padded[:-1],
        "short",
        "",
        f"{key}{key}",
    ]
    for text in texts:
        assert redact_text(text) == every_form_replaced(text), text
        assert redact_bytes(text.encode()) == every_form_replaced(text).encode(), text
        assert redact_config({"note": [text]}) == {"note": [every_form_replaced(text)]}, text
    assert redact_text(f"Bearer {key}") == MARKER
    assert redact_text(key[:-1]) == key[:-1]
    register("a-later-secret-value")  # registered after the first texts: redacted from now on
    assert redact_text("x a-later-secret-value") == f"x {MARKER}"
