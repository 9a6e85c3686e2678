"""Two real runs for the viewer's tests, made by `evalh run` itself: a baseline, and a current run in
which one result regresses, one is fixed, and a judge (a real OpenAI-compatible loopback server) fails
a rubric with a reason."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.store import open_store
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import StoredRuns
from tests.assertions.judge_helpers import OPENAI_PATH, openai_text
from tests.loopback import LoopbackServer, Reply, Request

XSS = '<img src=x onerror="document.body.dataset.pwned=1">'
JUDGE_REASON = "The answer is curt and never apologises."

_CONFIG = """\
description: {description}
prompts:
  - id: greet
    label: greet
    raw: "Greet {{{{ name }}}}"
  - id: hi
    label: hi
    raw: "Say hi to {{{{ name }}}} {{{{ note }}}}"
providers: [echo]
defaultTest:
  vars: {{note: ""}}
tests:
  - description: greets Ada
    vars: {{name: Ada}}
    assert: [{{type: icontains, value: {ada}}}]
  - description: greets Bob
    vars: {{name: Bob}}
    assert: [{{type: contains, value: {bob}}}]
  - description: markup stays text
    vars: {{name: Eve, note: {xss}}}
    assert: [{{type: contains, value: Eve}}]
  - description: polite refund answer
    vars: {{name: Carol}}
    output: No refunds. Go away.
    assert:
      - type: llm-rubric
        value: Politely explains the refund policy
        provider:
          id: openai:chat:judge-model
          config: {{apiBaseUrl: "{judge}/v1", apiKey: sk-test-viewer, retryBaseDelayS: 0.01}}
"""


def write_run(directory: Path, name: str, *, judge: str, regressed: bool) -> Path:
    """One run's JSON report (and its HTML report beside it)."""
    config = directory / f"{name}.yaml"
    config.write_text(
        textwrap.dedent(
            _CONFIG.format(
                description=f"Viewer fixture {name}",
                ada="Adeline" if regressed else "ada",  # passes in the baseline, fails now
                bob="Bob" if regressed else "Robert",  # fails in the baseline, fixed now
                xss=json.dumps(XSS),
                judge=judge,
            )
        ),
        encoding="utf-8",
    )
    report = directory / f"{name}.json"
    html = directory / f"{name}.html"
    args = ["run", str(config), "-o", str(report), "-o", str(html), "--no-cache", "--no-write"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # both runs have failures
    return report


def write_runs(directory: Path) -> tuple[Path, Path]:
    """(baseline.json, current.json)."""
    judge = LoopbackServer()
    try:
        verdict = json.dumps({"pass": False, "score": 0.2, "reason": JUDGE_REASON})
        judge.route("POST", OPENAI_PATH, lambda _request: openai_text(verdict))
        baseline = write_run(directory, "baseline", judge=judge.url, regressed=False)
        current = write_run(directory, "current", judge=judge.url, regressed=True)
    finally:
        judge.close()
    return baseline, current


# A run with repeats: per prompt text, how the loopback model answers its Nth call: Ada always right, Bob
# right every other time (flaky: half its repeats pass whatever order they run in), Cy never.
REPEATS = 4
_ANSWERS = {"Ada": lambda n: True, "Bob": lambda n: n % 2 == 0, "Cy": lambda n: False}
_REPEATED_CONFIG = """\
description: Viewer fixture with repeats
prompts: ["Answer {{{{ name }}}}", "Reply to {{{{ name }}}}"]
providers:
  - id: openai:chat:flaky-model
    config: {{apiBaseUrl: "{model}/v1", apiKey: sk-test-viewer, retryBaseDelayS: 0.01}}
tests:
  - vars: {{name: Ada}}
    assert: [{{type: contains, value: "yes"}}]
  - vars: {{name: Bob}}
    assert: [{{type: contains, value: "yes"}}]
  - vars: {{name: Cy}}
    assert: [{{type: contains, value: "yes"}}]
"""

# each test's passes out of REPEATS, in every column: what the model above makes of them
REPEATED_PASSES = {0: REPEATS, 1: REPEATS // 2, 2: 0}


def write_repeated_run(directory: Path) -> Path:
    """A run of 3 tests x 2 prompts, ``--repeat 4``, against a real loopback model: its JSON report
    (and its HTML report beside it)."""
    calls: dict[str, int] = {}

    def answer(request: Request) -> Reply:
        prompt = str(request.json["messages"][-1]["content"])
        calls[prompt] = calls.get(prompt, 0) + 1
        name = prompt.rsplit(" ", 1)[-1]
        return openai_text("yes" if _ANSWERS[name](calls[prompt]) else "no")

    model = LoopbackServer()
    try:
        model.route("POST", OPENAI_PATH, answer)
        config = directory / "repeated.yaml"
        config.write_text(_REPEATED_CONFIG.format(model=model.url), encoding="utf-8")
        report, html = directory / "repeated.json", directory / "repeated.html"
        args = ["run", str(config), "-o", str(report), "-o", str(html), "--no-cache", "--no-write"]
        result = CliRunner().invoke(app, [*args, "--repeat", str(REPEATS)])
    finally:
        model.close()
    assert result.exit_code == 1, result.output  # Bob's and Cy's repeats fail
    return report


@contextmanager
def stored_run_page(report: Path, source: str) -> Iterator[str]:
    """`evalh view` of the run store holding ``report`` (imported from ``source``): the URL of its page,
    served while the block runs."""
    with open_store() as store:
        run_id = store.import_report(json.loads(report.read_text(encoding="utf-8")), source=source).id
    with ViewerServer(StoredRuns()) as server:
        yield server.url + "#/run/" + run_id
