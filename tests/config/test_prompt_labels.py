"""Prompt labels are promptfoo's: an inline prompt's whole text, a .txt file's prompts ``<file>: <text>``.

The label is data: reports pair columns (and their named scores) by it, and a test's ``prompts:`` names
a prompt by it, so it is never flattened or shortened (displays shorten it themselves).
"""

from __future__ import annotations

import json

from evalh.config.load import load_suite
from evalh.runner.plan import plan_jobs
from tests.config.conftest import WriteFiles

LONG = "You are a helpful   assistant.\nAnswer in one sentence, please, and be kind about it: {{body}}\n"
LONG_YAML = """  - |
    You are a helpful   assistant.
    Answer in one sentence, please, and be kind about it: {{body}}
"""
SAILOR = "Say this as though you are a seafarer from the 17th century: {{body}}"


def test_labels_are_the_whole_text_as_promptfoo_writes_them(project: WriteFiles) -> None:
    config = project(
        """
prompts:
"""
        + LONG_YAML
        + """  - file://single.txt
  - {id: file://several.txt, label: mine}
  - {raw: [{role: user, content: "Hi {{body}}"}]}
providers: [echo]
tests: [{vars: {body: b}}]
""",
        {
            "single.txt": "A single text-file prompt, longer than sixty characters: {{body}}\n",
            "several.txt": "First:\n  {{body}}\n---\nSecond {{body}}\n",
        },
    )
    labels = [prompt.label for prompt in load_suite(config).prompts]
    assert labels == [
        LONG,
        "single.txt: A single text-file prompt, longer than sixty characters: {{body}}",
        "mine: several.txt: First:\n  {{body}}",
        "mine: several.txt: Second {{body}}",
        '[{"role":"user","content":"Hi {{body}}"}]',
    ]


def test_a_tests_prompts_filter_names_a_long_multiline_label(project: WriteFiles) -> None:
    config = project(
        """
prompts:
"""
        + LONG_YAML
        + f"""  - "{SAILOR}"
providers: [echo]
tests:
  - vars: {{body: only the second}}
    prompts: ["{SAILOR}"]
  - vars: {{body: only the first}}
    prompts: [{json.dumps(LONG)}]
"""
    )
    jobs = plan_jobs(load_suite(config))
    assert [(job.test.vars["body"], job.prompt.label[:8]) for job in jobs] == [
        ("only the second", "Say this"),
        ("only the first", "You are "),
    ]
