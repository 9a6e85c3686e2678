"""Good configs: what load_suite builds from them (merge rules, files, templating, providers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh.config.env import render_config_env
from evalh.config.files import LoadContext
from evalh.config.load import find_config, load_suite
from evalh.config.locate import parse_document
from evalh.errors import ConfigError, ConfigFileError
from evalh.model import RECORDED_PROVIDER_ID, ProviderSpec
from evalh.runner.plan import plan_jobs
from evalh.templating import template_env
from tests.config.conftest import WriteFiles


def test_default_test_merge_rules(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{a}} {{b}} {{c}}"]
providers: [echo]
defaultTest:
  vars: {a: default-a, b: default-b}
  metadata: {team: search, level: 1}
  threshold: 0.5
  options: {provider: fake, rubricPrompt: default rubric}
  assert:
    - {type: contains, value: "{{a}}"}
tests:
  - vars: {b: test-b, c: test-c}
    metadata: {level: 2}
    options: {rubricPrompt: test rubric}
    assert:
      - {type: icontains, value: "{{b}}"}
  - vars: {c: only-c}
    threshold: 0.9
    options: {provider: {embedding: local, text: echo}}
"""
    )
    first, second = load_suite(config).tests
    assert dict(first.vars) == {"a": "default-a", "b": "test-b", "c": "test-c"}
    assert dict(first.metadata) == {"team": "search", "level": 2}
    assert first.threshold == 0.5 and second.threshold == 0.9
    assert [(a.type, a.value, a.path) for a in first.asserts] == [
        ("contains", "default-a", "defaultTest.assert[0]"),
        ("icontains", "test-b", "tests[0].assert[0]"),
    ]
    assert dict(first.options) == {"provider": "fake", "rubricPrompt": "test rubric"}
    assert first.provider is not None and first.provider.default == ProviderSpec(
        id="fake", path="defaultTest.options.provider", base_dir=str(config.parent.resolve())
    )
    # options merge shallowly: the test's provider replaces the default's entirely
    assert second.provider is not None and second.provider.default is None
    assert second.provider.for_kind("embedding").id == "local"  # type: ignore[union-attr]
    assert second.provider.for_kind("text").id == "echo"  # type: ignore[union-attr]
    assert [a.value for a in second.asserts] == ["default-a"]


def test_default_test_provider_is_one_choice_for_the_tests_without_their_own(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{x}}"]
providers: [echo]
defaultTest: {options: {provider: {embedding: local, text: fake}}}
tests:
  - vars: {x: a}
  - vars: {x: b}
    options: {provider: fake}
  - vars: {x: c}
"""
    )
    first, own, third = load_suite(config).tests
    # parsed and checked once for a 5,000-test suite, not once per test
    assert first.provider is not None and first.provider is third.provider
    assert first.provider.for_kind("text").path == "defaultTest.options.provider.text"  # type: ignore[union-attr]
    assert own.provider is not None and own.provider.default is not None
    assert own.provider.default.path == "tests[1].options.provider"


def test_a_bad_default_test_provider_is_reported_once(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{x}}"]
providers: [echo]
defaultTest: {options: {provider: {text: opneai:chat:gpt-4o}}}
tests: [{vars: {x: a}}, {vars: {x: b}}]
"""
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = caught.value.render()
    assert message.count("unknown provider id 'opneai:chat:gpt-4o'") == 1
    assert "defaultTest.options.provider.text" in message


def test_validate_makes_no_report_copy_of_the_config(project: WriteFiles) -> None:
    config = project('prompts: ["{{x}}"]\nproviders: [echo]\ntests: [{vars: {x: a}}]\n')
    assert load_suite(config).raw_config["tests"] == [{"vars": {"x": "a"}}]
    # validate writes no report: the redacted walk of a 5,000-test config was a tenth of its CPU
    assert load_suite(config, report_config=False).raw_config == {}


def test_cli_vars_override_default_vars_but_not_test_vars(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{x}} {{y}}"]
providers: [echo]
defaultTest: {vars: {x: default, y: default}}
tests:
  - vars: {y: test}
"""
    )
    (test,) = load_suite(config, cli_vars={"x": "cli", "y": "cli"}).tests
    assert dict(test.vars) == {"x": "cli", "y": "test"}


def test_default_vars_from_a_file(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{x}} {{y}}"]
providers: [echo]
defaultTest: {vars: file://defaults.yaml}
tests:
  - vars: {y: test}
""",
        {"defaults.yaml": "x: from-file\ny: from-file\n"},
    )
    (test,) = load_suite(config, cli_vars={"y": "cli"}).tests
    assert dict(test.vars) == {"x": "from-file", "y": "test"}


def test_vars_reference_vars_and_files(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{question}}"]
providers: [echo]
tests:
  - vars:
      question: "Tell me about {{topic}} in {{style}}"
      style: "{{length}} words"
      length: "ten"
      topic: file://data/topic.txt
      doc: file://data/doc.json
      table: file://data/table.yaml
""",
        {
            "data/topic.txt": "owls\n",
            "data/doc.json": '{"title": "Owls", "pages": [1, 2]}',
            "data/table.yaml": "- a\n- b\n",
        },
    )
    (test,) = load_suite(config).tests
    assert test.vars["question"] == "Tell me about owls in ten words"  # a text file is trimmed
    assert test.vars["doc"] == {"title": "Owls", "pages": [1, 2]}
    assert test.vars["table"] == ["a", "b"]


def test_assertion_values_are_rendered_and_loaded(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{name}}"]
providers: [echo]
tests:
  - vars: {name: Ada, other: Bob}
    assert:
      - {type: contains-any, value: ["{{name}}", "{{other}}", 3]}
      - {type: equals, value: file://expected.txt}
      - {type: is-json, value: file://schema.json}
      - {type: python, value: file://check.py:grade, metric: "quality-{{name}}"}
      - {type: equals, value: {name: "{{name}}"}}
      - type: assert-set
        threshold: 0.5
        weight: 2
        assert:
          - {type: not-contains, value: "{{other}}", weight: 0}
""",
        {
            "expected.txt": "  Hello Ada  \n",
            "schema.json": '{"type": "object"}',
            "check.py": "def grade(o, c):\n    return True\n",
        },
    )
    (test,) = load_suite(config).tests
    values = [spec.value for spec in test.asserts]
    assert values[:5] == [
        ["Ada", "Bob", 3],
        "Hello Ada",
        {"type": "object"},
        "file://check.py:grade",
        {"name": "{{name}}"},
    ]
    assert test.asserts[3].metric == "quality-Ada"
    group = test.asserts[5]
    assert (group.type, group.threshold, group.weight) == ("assert-set", 0.5, 2.0)
    (child,) = group.children
    assert (child.type, child.negate, child.value, child.weight, child.path) == (
        "not-contains",  # the type as written; base_type is "contains"
        True,
        "Bob",
        0.0,
        "tests[0].assert[5].assert[0]",
    )
    assert child.full_type == "not-contains"
    assert dict(test.asserts[0].raw) == {"type": "contains-any", "value": ["{{name}}", "{{other}}", 3]}


def test_recorded_outputs_need_no_prompt_or_provider(project: WriteFiles) -> None:
    config = project(
        """
tests:
  - description: a
    output: Paris is the capital of France.
    assert: [{type: icontains, value: paris}]
  - description: b
    providerOutput: {answer: 42}
    assert: [{type: is-json}]
"""
    )
    suite = load_suite(config)
    assert [p.id for p in suite.providers] == [RECORDED_PROVIDER_ID]
    assert len(suite.prompts) == 1 and suite.prompts[0].raw == ""
    first, second = suite.tests
    assert (first.has_output, first.output) == (True, "Paris is the capital of France.")
    assert (second.has_output, second.output) == (True, {"answer": 42})


def test_targets_alias_and_provider_forms(project: WriteFiles) -> None:
    config = project(
        """
prompts: [hi]
targets:
  - echo
  - {id: openai:chat:gpt-4o-mini, label: mini, config: {temperature: 0, apiKey: sk-secret}}
  - {"ollama:chat:llama3.2": {label: llama, config: {num_predict: 5}}}
tests: [{}]
"""
    )
    suite = load_suite(config)
    assert [(p.id, p.label, dict(p.config), p.path) for p in suite.providers] == [
        ("echo", None, {}, "targets[0]"),
        ("openai:chat:gpt-4o-mini", "mini", {"temperature": 0, "apiKey": "sk-secret"}, "targets[1]"),
        ("ollama:chat:llama3.2", "llama", {"num_predict": 5}, "targets[2]"),
    ]
    assert all(p.base_dir == str(config.parent.resolve()) for p in suite.providers)
    assert suite.raw_config["targets"][1]["config"] == {"temperature": 0, "apiKey": "[REDACTED]"}
    assert "sk-secret" not in json.dumps(suite.raw_config)


def test_providers_from_file(project: WriteFiles) -> None:
    config = project(
        "prompts: [hi]\nproviders: file://providers.yaml\ntests: [{}]\n",
        {"providers.yaml": "- echo\n- id: fake:8\n  label: tiny\n"},
    )
    assert [(p.id, p.label) for p in load_suite(config).providers] == [("echo", None), ("fake:8", "tiny")]


def test_typed_provider_map_on_an_assertion(project: WriteFiles) -> None:
    config = project(
        """
prompts: [hi]
providers: [echo]
tests:
  - assert:
      - type: similar
        value: hello
        provider: {embedding: {id: fake:16, config: {seed: 1}}, text: echo}
"""
    )
    (spec,) = load_suite(config).tests[0].asserts
    assert spec.provider is not None
    embedding = spec.provider.for_kind("embedding")
    assert embedding is not None and (embedding.id, dict(embedding.config)) == ("fake:16", {"seed": 1})
    assert embedding.path == "tests[0].assert[0].provider.embedding"


def test_grader_becomes_the_suite_default(project: WriteFiles) -> None:
    config = project(
        "prompts: [hi]\nproviders: [echo]\ntests:\n  - assert: [{type: llm-rubric, value: is polite}]\n"
    )
    suite = load_suite(config, grader="openai:chat:gpt-4o-mini")
    chosen = suite.default_provider.for_kind("text") if suite.default_provider else None
    assert chosen is not None and chosen.id == "openai:chat:gpt-4o-mini"


def test_env_rendering(project: WriteFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_TEST_MODEL", "gpt-4o-mini")
    config = project(
        """
env:
  GREETING: "hello from {{ env.EVALH_TEST_MODEL }}"
  DEBUG: true
prompts: ["{{ env.GREETING }} / {{question}}"]
providers: ["openai:chat:{{ env.EVALH_TEST_MODEL }}"]
tests:
  - vars: {question: "{{ env.MISSING_BUT_DEFAULTED | default('q') }}"}
"""
    )
    suite = load_suite(config)
    assert suite.providers[0].id == "openai:chat:gpt-4o-mini"
    # a prompt stays a template: env is in its context when it is rendered, once
    assert suite.prompts[0].raw == "{{ env.GREETING }} / {{question}}"
    assert plan_jobs(suite)[0].rendered_prompt == "hello from gpt-4o-mini / q"
    assert suite.tests[0].vars["question"] == "q"
    assert dict(suite.env) == {"GREETING": "hello from gpt-4o-mini", "DEBUG": "true"}


def test_prompts_from_files(project: WriteFiles) -> None:
    config = project(
        """
prompts:
  - file://prompts.txt
  - file://chat.json
  - {id: file://chat.yaml, label: yaml chat}
  - {raw: "Inline {{q}}", label: inline}
  - "A very long inline prompt that goes on and on about {{q}} until the label has to be shortened"
providers: [echo]
tests: [{vars: {q: why}}]
""",
        {
            "prompts.txt": "First {{q}}\n---\nSecond {{q}}\n",
            "chat.json": json.dumps(
                [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{q}}"}]
            ),
            "chat.yaml": "- role: user\n  content: 'Q: {{q}}'\n",
        },
    )
    prompts = load_suite(config).prompts
    assert [p.raw for p in prompts[:2]] == ["First {{q}}", "Second {{q}}"]
    assert prompts[0].label == "prompts.txt: First {{q}}"
    assert prompts[2].raw == ({"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{q}}"})
    assert prompts[2].label == "chat.json"
    assert prompts[3].label == "yaml chat" and prompts[3].raw == ({"role": "user", "content": "Q: {{q}}"},)
    assert prompts[4].label == "inline"
    assert prompts[5].label == prompts[5].raw  # promptfoo's label: the whole text (processString)
    assert len({p.id for p in prompts}) == len(prompts)


def test_tests_from_files_and_globs(project: WriteFiles) -> None:
    config = project(
        """
prompts: ["{{q}}"]
providers: [echo]
tests:
  - vars: {q: inline}
  - file://cases/*.yaml
  - file://more.json
  - file://lines.jsonl
""",
        {
            "cases/a.yaml": "- vars: {q: a1}\n- vars: {q: a2}\n",
            "cases/b.yaml": "- vars: {q: b1}\n",
            "more.json": json.dumps([{"vars": {"q": "j1"}, "assert": [{"type": "contains", "value": "j"}]}]),
            "lines.jsonl": '{"vars": {"q": "l1"}}\n\n{"vars": {"q": "l2"}, "description": "line two"}\n',
        },
    )
    tests = load_suite(config).tests
    assert [t.vars["q"] for t in tests] == ["inline", "a1", "a2", "b1", "j1", "l1", "l2"]
    assert [t.index for t in tests] == list(range(7))
    assert tests[4].asserts[0].path == "tests[4].assert[0]"
    assert tests[6].description == "line two"


def test_no_tests_means_one_empty_test(project: WriteFiles) -> None:
    config = project(
        "prompts: [hello]\nproviders: [echo]\ndefaultTest:\n  assert: [{type: contains, value: hello}]\n"
    )
    (test,) = load_suite(config).tests
    assert test.asserts[0].value == "hello"


def test_evaluate_options_output_path_and_metadata(project: WriteFiles) -> None:
    config = project(
        """
description: demo
prompts: [hi]
providers: [echo]
evaluateOptions: {maxConcurrency: 2, repeat: 3, cache: false, timeoutMs: 500}
outputPath: out.json
metadata: {owner: qa}
tests: [{}]
"""
    )
    suite = load_suite(config)
    assert (suite.evaluate_options.max_concurrency, suite.evaluate_options.repeat) == (2, 3)
    assert (suite.evaluate_options.cache, suite.evaluate_options.timeout_ms) == (False, 500)
    assert suite.output_paths == ("out.json",)
    assert dict(suite.metadata) == {"owner": "qa"} and suite.description == "demo"
    assert suite.config_path == str(config.resolve())


def test_json_config_is_accepted(project: WriteFiles) -> None:
    body = {"prompts": ["{{x}}"], "providers": ["echo"], "tests": [{"vars": {"x": "1"}}]}
    config = project(json.dumps(body, indent=2), name="promptfooconfig.json")
    assert load_suite(config).tests[0].vars["x"] == "1"


def test_find_config_prefers_evalh_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="no config file found"):
        find_config(tmp_path)
    (tmp_path / "promptfooconfig.yaml").write_text("tests: []\n", encoding="utf-8")
    assert find_config(tmp_path).name == "promptfooconfig.yaml"
    (tmp_path / "evalh.yml").write_text("tests: []\n", encoding="utf-8")
    assert find_config(tmp_path).name == "evalh.yml"


def test_python_provider_file_must_exist(project: WriteFiles) -> None:
    config = project(
        "prompts: [hi]\nproviders: ['python:provider.py:call_api', 'file://provider.py']\ntests: [{}]\n",
        {"provider.py": "def call_api(prompt, options, context):\n    return {'output': prompt}\n"},
    )
    assert [p.id for p in load_suite(config).providers] == [
        "python:provider.py:call_api",
        "file://provider.py",
    ]


def test_sentence_similarity_provider_is_fine_for_cosine(project: WriteFiles) -> None:
    config = project(
        """
prompts: [hi]
providers: [echo]
tests:
  - assert:
      - {type: similar, value: hi, provider: "hf:sentence-similarity:sentence-transformers/all-MiniLM-L6-v2"}
"""
    )
    assert load_suite(config).tests[0].asserts[0].type == "similar"


def test_an_error_message_never_shows_a_secret(project: WriteFiles) -> None:
    config = project(
        "prompts: [hi]\nproviders:\n  - id: opneai:gpt-4o\n"
        "    config: {apiKey: sk-very-secret}\ntests: [{}]\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "sk-very-secret" not in str(caught.value)


def test_ten_thousand_csv_tests_load_quickly(project: WriteFiles) -> None:
    rows = "".join(
        f"What is {i}?,{i},contains:{i},similar(0.7):The answer is {i},case {i}\n" for i in range(10_000)
    )
    config = project(
        """
prompts: ["Q: {{question}}"]
providers: [echo]
defaultTest:
  assert: [{type: icontains, value: "{{answer}}"}]
tests: file://tests.csv
""",
        {"tests.csv": "question,answer,__expected,__expected2,__description\n" + rows},
    )
    suite = load_suite(config)  # the load time is measured by benchmarks/bench_run.py, not here
    assert len(suite.tests) == 10_000
    assert suite.tests[9_999].asserts[0].value == "9999"
    assert suite.tests[9_999].asserts[2].threshold == 0.7


def test_env_rendering_copies_only_what_it_renders(tmp_path: Path) -> None:
    document = parse_document(
        "providers:\n  - id: openai:chat:m\n    config: {apiBaseUrl: 'http://{{ env.HOST }}/v1'}\n"
        "tests:\n  - vars: {q: '{{ env.HOST }}'}\n",
        "c.yaml",
    )
    env = template_env({"HOST": "h1"})
    rendered = render_config_env(document.data, env, document, LoadContext(config_file=tmp_path / "c.yaml"))
    assert rendered["providers"][0]["config"]["apiBaseUrl"] == "http://h1/v1"
    assert document.data["providers"][0]["config"]["apiBaseUrl"] == "http://{{ env.HOST }}/v1"
    assert rendered["tests"] is document.data["tests"]  # a var is rendered later: nothing copied


def test_an_env_value_no_environment_can_hold_is_a_located_config_error(tmp_path: Path) -> None:
    """A NUL in an ``env:`` value or '=' in its name: no program of the run could start with it, so the load
    names the place instead of the run failing row by row (or, before, with an internal error)."""
    config = tmp_path / "evalh.yaml"
    config.write_text(
        'prompts: ["hi"]\nproviders: [echo]\nenv:\n  GOOD: fine\n  BAD: "a\\0b"\n  "X=Y": z\n'
        "tests:\n  - assert: [{type: contains, value: hi}]\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert "evalh.yaml:5:3 env.BAD: the value has a NUL character" in message
    assert "evalh.yaml:6:3 env['X=Y']: the name has '='" in message
    assert "GOOD" not in message
