"""The one template renderer: Nunjucks-compatible output, strict undefined, located errors."""

from __future__ import annotations

import pytest

from evalh.common.notices import warnings_to
from evalh.errors import TemplateError
from evalh.templating import (
    engine,
    referenced_names,
    render_env,
    render_prompt,
    render_template,
    template_env,
)


def test_renders_like_nunjucks() -> None:
    variables = {"name": "Ada", "doc": {"a": [1, 2]}, "flag": True, "none": None, "items": ["x", "y"]}
    text = "{{name}}|{{doc}}|{{flag}}|{{none}}|{% for i in items %}{{i}}{% endfor %}|{{ doc | dump }}"
    # a value prints as JavaScript's String(value); JSON is one filter away (dump)
    assert render_template(text, variables, where="w") == 'Ada|[object Object]|true||xy|{"a":[1,2]}'


def test_plain_text_is_returned_as_is() -> None:
    assert render_template("no markers { here }", {}, where="w") == "no markers { here }"


def test_undefined_variable_names_the_place_and_the_variable() -> None:
    with warnings_to(None, strict=True), pytest.raises(TemplateError) as caught:
        render_template("Hello {{ nmae }}", {"name": "Ada"}, where="evalh.yaml:3:5 prompts[0]")
    message = str(caught.value)
    assert message.startswith("evalh.yaml:3:5 prompts[0]: undefined variable 'nmae'")
    assert "--var" in message


def test_an_undefined_variable_renders_empty_with_one_warning_per_place() -> None:
    shown: list[str] = []
    with warnings_to(shown.append):
        template = "Hello {{ nmae }}{{ a.b }}{% for x in xs %}{{ x }}{% endfor %}{{ d | default('!') }}"
        for _ in range(3):
            assert render_template(template, {}, where="evalh.yaml:3:5 prompts[0]") == "Hello !"
        assert render_template("{% if maybe %}y{% endif %}{{ maybe is defined }}", {}, where="w") == "false"
        render_template("Bye {{ nmae }}", {}, where="evalh.yaml:9:5 prompts[1]")
    assert [text.split(":")[2] for text in shown] == ["5 prompts[0]"] * 3 + ["5 prompts[1]"]
    assert "undefined variable 'nmae'" in shown[0] and "rendered empty" in shown[0]
    assert "undefined variable 'a'" in shown[1] and "undefined variable 'xs'" in shown[2]


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
    with warnings_to(None, strict=True), pytest.raises(TemplateError, match="'EVALH_TEST_NOPE' is not set"):
        render_env("{{ env.EVALH_TEST_NOPE }}", env, where="w")
    with warnings_to(None):
        assert render_env("[{{ env.EVALH_TEST_NOPE }}]", env, where="w") == "[]"  # as in promptfoo


def test_referenced_names_ignore_loop_variables_and_globals() -> None:
    names = referenced_names("{% for d in docs %}{{ d }}{{ range(2) }}{% endfor %}{{ q }}", where="w")
    assert names == frozenset({"docs", "q"})


def test_compiled_templates_are_cached() -> None:
    template = "Q{{ n }}: {% if n > 5 %}big{% else %}small{% endif %}"
    before = engine._compile.cache_info()
    rendered = [render_template(template, {"n": n}, where="w") for n in range(10_000)]
    after = engine._compile.cache_info()
    assert rendered[3] == "Q3: small" and rendered[9999] == "Q9999: big"
    assert after.misses - before.misses <= 1  # compiled once, then served from the cache
    assert after.hits - before.hits >= 9_999


@pytest.mark.parametrize(
    "template",
    [
        "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ x | attr('__class__') }}",
        "{{ x['__class__'] }}",
        "{{ (x | attr(name)).__name__ }}",
        "{{ items.append(3) }}",
        "{{ 'a' * 10**9 }}",
        "{{ [0] * 10**9 }}",
        "{{ 10 ** 1000000 }}",
        "{{ '%999999999d' % 1 }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{{ '%s' | format(1) }}{{ '%999999999s' | format(1) }}",
        "{{ 'x' | center(10**9) }}",
        "{{ range(10**9) | list }}",
        # widths from a str method or an argument (10**7: cheap to build if the sandbox let it through)
        "{{ 'a'.ljust(10**7) }}",
        "{{ 'a'.center(10**7) }}",
        "{{ 'a'.zfill(10**7) }}",
        "{{ 'a\tb'.expandtabs(10**7) }}",
        "{{ '%0*d' % (10**7, 1) }}",
        "{{ '%.*f' % (10**7, 1) }}",
        "{{ '%*s' | format(10**7, 'a') }}",
        "{{ '{0:>{1}}'.format('a', 10**7) }}",
        "{{ '{x:{w}}'.format_map({'x': 'a', 'w': 10**7}) }}",
    ],
)
def test_the_sandbox_refuses_code_and_huge_values(template: str) -> None:
    variables = {"x": 1, "name": "__class__", "items": [1, 2]}
    with pytest.raises(TemplateError) as caught:
        render_template(template, variables, where="tests.csv:2:1 tests[0].vars.q")
    assert str(caught.value).startswith("tests.csv:2:1 tests[0].vars.q: template ")
    assert variables["items"] == [1, 2]


def test_internal_attributes_are_found_when_the_template_is_parsed() -> None:
    """So `evalh validate` reports them for prompts and rubric prompts, which it never renders."""
    with pytest.raises(TemplateError, match="'__globals__', an internal attribute"):
        referenced_names("{{ cycler.__init__.__globals__ }}", where="w")


def test_lipsum_is_not_a_global() -> None:
    with pytest.raises(TemplateError, match="undefined variable 'lipsum'"):
        render_template("{{ lipsum(n=10**6) }}", {}, where="w")


def test_env_is_data_in_the_render_context() -> None:
    env = template_env({"TITLE": "{{ 7*7 }}", "EMPTY": ""})
    assert (
        render_template("[{{ env.TITLE }}|{{ env['TITLE'] }}]", {}, where="w", env=env)
        == "[{{ 7*7 }}|{{ 7*7 }}]"
    )
    assert (
        render_env("https://h/{{ env.TITLE }}/{{ path }}", env, where="w") == "https://h/{{ 7*7 }}/{{ path }}"
    )
    assert render_template("{{ env.EVALH_TEST_UNSET | default('d') }}", {}, where="w", env=env) == "d"
    assert render_template("{{ env.TITLE }}", {"env": {"TITLE": "a var wins"}}, where="w") == "a var wins"
    assert "env" not in referenced_names("{{ env.TITLE }}{{ q }}", where="w")
    with (
        warnings_to(None, strict=True),
        pytest.raises(TemplateError, match="environment variable 'EVALH_TEST_UNSET' is not set"),
    ):
        render_template("{{ env.EVALH_TEST_UNSET }}", {}, where="w", env=env)
    with pytest.raises(TemplateError, match="refused"):
        render_template("{{ env._values }}", {}, where="w", env=env)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ 10 / 4 }} {{ 10 / 2 }} {{ 3.7 | round }} {{ 2.5 | round(0, 'floor') }}", "2.5 5 4 2"),
        ("{{ [1, 2, 3] | reverse }} {{ 'abc' | reverse }}", "3,2,1 cba"),
        ("{{ 'a b/c?d' | urlencode }} {{ {'k': 'v w', 'x': 1} | urlencode }}", "a%20b%2Fc%3Fd k=v%20w&x=1"),
        ("{{ 'a\nb\r\nc' | nl2br }}", "a<br />\nb<br />\nc"),
        (
            "{{ 'hello world foo' | truncate(11) }}|{{ 'abcdef' | truncate(3, true, '~') }}",
            "hello world...|abc~",
        ),
        ("{{ 'short' | truncate(5) }}", "short"),
        ("{{ '{\"a\": [1, 2]}' | load }} {{ ('{\"a\": 7}' | load).a }}", "[object Object] 7"),
        # dump is JSON.stringify: compact without an indent (Nunjucks, and so promptfoo)
        ("{{ {'a': 1, 'b': [1, 2]} | dump }} {{ [1] | json }}", '{"a":1,"b":[1,2]} [1]'),
        ("{{ {'a': 1, 'b': [1]} | dump(2) }}", '{\n  "a": 1,\n  "b": [\n    1\n  ]\n}'),
        ("{{ items | selectattr('ok') | map(attribute='n') }}", "1"),
        ("{{ missing | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }}", "d  d"),
        (
            "{{ ' Ab ' | trim | upper }} {{ 'AB' | lower }} {{ 'ab cd' | title }} {{ 'aB' | capitalize }}",
            "AB ab Ab Cd Ab",
        ),
        ("{{ [3, 1, 2] | sort | join('-') }} {{ items | length }} {{ 'a b  c' | wordcount }}", "1-2-3 2 3"),
        ("{{ 'aXbX' | replace('X', '.') }} {{ [4, 5] | first }} {{ [4, 5] | last }}", "a.b. 4 5"),
        (
            "{{ '<b>' | escape }} {{ '<b>' | safe }} {{ '3.5' | float }} {{ '7' | int + 1 }}",
            "&lt;b&gt; <b> 3.5 8",
        ),
        ("{{ true }} {{ false }} {{ none }}|{{ 'x' * 3 }} {{ '%05.1f' % 2.25 }}", "true false |xxx 002.2"),
    ],
)
def test_nunjucks_filters_and_output(template: str, expected: str) -> None:
    variables = {"none": None, "items": [{"ok": True, "n": 1}, {"ok": False, "n": 2}]}
    assert render_template(template, variables, where="w") == expected


@pytest.mark.parametrize(
    ("template", "value", "expected"),
    [
        ("{% for k, v in x %}{{ k }}={{ v }};{% endfor %}", {"a": 1, "b": [1, 2]}, "a=1;b=1,2;"),
        ("{% for k, v in x %}{{ k }}={{ v }};{% endfor %}", [["a", 1], ("b", 2)], "a=1;b=2;"),
        ("{% for k in x %}{{ k }};{% endfor %}", {"a": 1, "b": 2}, "a;b;"),
        ("{% for k, v in x | dictsort %}{{ k }}={{ v }};{% endfor %}", {"b": 1, "a": 2}, "a=2;b=1;"),
        (
            "{% for k, v in x %}{% for a, b in v %}{{ k }}{{ a }}{{ b }}{% endfor %}{% endfor %}",
            {"o": {"i": 1}},
            "oi1",
        ),
        ("{% for k, v in nothing %}{{ k }}{% else %}none{% endfor %}", {}, "none"),
    ],
)
def test_nunjucks_pair_loops_walk_a_mappings_items(template: str, value: object, expected: str) -> None:
    # Jinja alone would unpack each key ("a" cannot be unpacked into k, v); Nunjucks walks the items
    assert render_template(template, {"x": value}, where="w") == expected


_SOLE_VALUES = ["text", "", "é {{ not rendered }}", 0, 5, 5.0, 2.5, 1e20, -0.0, True, False, None]
_SOLE_VALUES += [[1, "a", None], {"a": {"b": [1, 2.0]}, "c": "é"}, ("t", 1)]


@pytest.mark.parametrize("value", _SOLE_VALUES, ids=repr)
@pytest.mark.parametrize("template", ["{{answer}}", "{{ answer }}", "{{\tanswer\n}}"])
def test_a_prompt_of_one_variable_prints_what_jinja_prints(template: str, value: object) -> None:
    expected = engine._compile(template)[0].render({"env": {}, "answer": value})
    assert render_template(template, {"answer": value}, where="w") == expected


@pytest.mark.parametrize(
    ("template", "variables", "expected"),
    [
        ("{{ true }}", {"true": "var"}, "true"),  # a constant, not the variable
        ("{{ none }}", {"none": "var"}, ""),
        ("{{ env }}", {"env": "mine"}, "mine"),  # the vars' env replaces the environment
        ("{{ answer }}x", {"answer": "a"}, "ax"),
        ("{{- answer -}}", {"answer": "a"}, "a"),
    ],
)
def test_templates_near_one_variable_render_as_jinja_does(
    template: str, variables: dict[str, object], expected: str
) -> None:
    assert render_template(template, variables, where="w") == expected


def test_a_prompt_of_one_undefined_variable_still_warns() -> None:
    shown: list[str] = []
    with warnings_to(shown.append):
        assert render_template("{{answer}}", {"question": "q"}, where="evalh.yaml:2:5 prompts[0]") == ""
    assert len(shown) == 1 and "undefined variable 'answer'" in shown[0]
    with warnings_to(None, strict=True), pytest.raises(TemplateError, match="undefined variable 'answer'"):
        render_template("{{answer}}", {"question": "q"}, where="w")
