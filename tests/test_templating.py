"""The one template renderer: Nunjucks-compatible output, strict undefined, located errors."""

from __future__ import annotations

import pytest

from evalh import templating
from evalh.templating import referenced_names, render_env, render_prompt, render_template, template_env
from evalh.errors import TemplateError


def test_renders_like_nunjucks() -> None:
    variables = {"name": "Ada", "doc": {"a": [1, 2]}, "flag": True, "none": None, "items": ["x", "y"]}
    text = "{{name}}|{{doc}}|{{flag}}|{{none}}|{% for i in items %}{{i}}{% endfor %}|{{ doc | dump }}"
    assert render_template(text, variables, where="w") == 'Ada|{"a": [1, 2]}|true||xy|{"a": [1, 2]}'


def test_plain_text_is_returned_as_is() -> None:
    assert render_template("no markers { here }", {}, where="w") == "no markers { here }"


def test_undefined_variable_names_the_place_and_the_variable() -> None:
    with pytest.raises(TemplateError) as caught:
        render_template("Hello {{ nmae }}", {"name": "Ada"}, where="evalh.yaml:3:5 prompts[0]")
    message = str(caught.value)
    assert message.startswith("evalh.yaml:3:5 prompts[0]: undefined variable 'nmae'")
    assert "--var" in message


def test_syntax_error_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="template syntax error"):
        render_template("{% if x %}unclosed", {"x": 1}, where="w")


def test_chat_prompts_render_every_string() -> None:
    raw = (
        {"role": "system", "content": "Be {{tone}}"},
        {"role": "user", "content": [{"type": "text", "text": "{{q}}"}]},
    )
    rendered = render_prompt(raw, {"tone": "brief", "q": "why"}, where="p")
    assert rendered == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": [{"type": "text", "text": "why"}]},
    ]


def test_render_env_keeps_other_templates() -> None:
    env = template_env({"HOST": "example.com"})
    assert render_env("https://{{ env.HOST }}/{{path}}", env, where="w") == "https://example.com/{{path}}"
    assert render_env("{{ env['HOST'] }}", env, where="w") == "example.com"
    with pytest.raises(TemplateError, match="'EVALH_TEST_NOPE' is not set"):
        render_env("{{ env.EVALH_TEST_NOPE }}", env, where="w")


def test_referenced_names_ignore_loop_variables_and_globals() -> None:
    names = referenced_names("{% for d in docs %}{{ d }}{{ range(2) }}{% endfor %}{{ q }}", where="w")
    assert names == frozenset({"docs", "q"})


def test_compiled_templates_are_cached() -> None:
    template = "Q{{ n }}: {% if n > 5 %}big{% else %}small{% endif %}"
    before = templating._compile.cache_info()
    rendered = [render_template(template, {"n": n}, where="w") for n in range(10_000)]
    after = templating._compile.cache_info()
    assert rendered[3] == "Q3: small" and rendered[9999] == "Q9999: big"
    assert after.misses - before.misses <= 1  # compiled once, then served from the cache
    assert after.hits - before.hits >= 9_999
