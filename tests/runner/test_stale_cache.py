"""The cache never hides itself (issue 23): an app under test whose answer changes between runs, served by
a real loopback server behind the same provider id and URL.

A plain re-run reads the cache and says so in every report; ``--no-cache`` calls the app and refreshes
the cache, so the next plain run grades the live app's answers; ``latency`` on a cached row is skipped
with its reason, never an ERROR."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import evalh
from evalh.cli.app import app
from evalh.model import CacheMode
from evalh.reports.table import print_report
from tests.loopback import LoopbackServer, Reply, Request

CACHED_ALL = "2 of 2 outputs from the cache; --no-cache calls the providers"
REFRESHED = "0 of 2 outputs from the cache; --no-cache called the providers and refreshed the cache"


class App:
    """The app under test: an OpenAI-compatible endpoint whose answers carry its current version."""

    def __init__(self, loopback: LoopbackServer) -> None:
        self.version = "old"
        self.loopback = loopback
        loopback.route("POST", "/v1/chat/completions", self.reply)

    def reply(self, request: Request) -> Reply:
        question = request.json["messages"][-1]["content"]
        message = {"role": "assistant", "content": f"{self.version} answer to {question}"}
        return Reply.json({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

    @property
    def calls(self) -> int:
        return len(self.loopback.requests)


@pytest.fixture
def live(loopback: LoopbackServer) -> App:
    return App(loopback)


def config(tmp_path: Path, live: App, expected: str = "answer") -> Path:
    path = tmp_path / "evalh.yaml"
    text = f"""
        prompts: ["{{{{q}}}}"]
        providers:
          - id: openai:chat:app
            config: {{apiBaseUrl: "{live.loopback.url}/v1", apiKey: sk-test-key-123456}}
        tests:
          - vars: {{q: one}}
            assert: [{{type: contains, value: {expected}}}, {{type: latency, threshold: 600000}}]
          - vars: {{q: two}}
            assert: [{{type: contains, value: {expected}}}, {{type: latency, threshold: 600000}}]
    """
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(*args: str | Path) -> Result:
    result = CliRunner().invoke(app, ["run", *map(str, args), "--no-progress-bar", "--no-write"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def report(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def outputs(path: Path) -> list[str]:
    return [row["response"]["output"] for row in report(path)["results"]["results"]]


def test_a_re_run_says_it_read_the_cache_and_no_cache_refreshes_it(live: App, tmp_path: Path) -> None:
    suite = config(tmp_path, live)
    first = run(suite, "-o", tmp_path / "first.json")
    assert first.exit_code == 0 and live.calls == 2
    assert report(tmp_path / "first.json")["results"]["evalh"]["cache"]["fromCache"] == 0

    live.version = "new"  # the app changed; same provider id and URL
    stale = run(suite, "--no-table", "-o", tmp_path / "stale.json", "-o", tmp_path / "summary.md")
    assert live.calls == 2 and outputs(tmp_path / "stale.json") == ["old answer to one", "old answer to two"]
    assert CACHED_ALL + "." in stale.output  # on the console, also with --no-table
    block = report(tmp_path / "stale.json")["results"]["evalh"]["cache"]
    assert block == {"outputs": 2, "fromCache": 2, "mode": "use", "summary": CACHED_ALL}
    assert "> [!NOTE]" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    shown = io.StringIO()  # a stored run shown again (evalh runs show) says it too
    print_report(report(tmp_path / "stale.json"), console_file=shown)
    assert CACHED_ALL + "." in shown.getvalue()
    # latency cannot be timed on a cached row: skipped with its reason, and the rows pass
    assert stale.exit_code == 0
    for row in report(tmp_path / "stale.json")["results"]["results"]:
        latency = row["gradingResult"]["componentResults"][1]
        assert latency["skipped"] is True and latency["reason"].startswith("not applicable: ")
        assert row["success"] is True

    fresh = run(suite, "--no-cache", "-o", tmp_path / "fresh.json")
    assert live.calls == 4 and outputs(tmp_path / "fresh.json") == ["new answer to one", "new answer to two"]
    assert REFRESHED in fresh.output
    assert report(tmp_path / "fresh.json")["results"]["evalh"]["cache"]["mode"] == "refresh"
    for row in report(tmp_path / "fresh.json")["results"]["results"]:  # timed: latency ran
        assert "skipped" not in row["gradingResult"]["componentResults"][1]

    after = run(suite, "-o", tmp_path / "after.json")
    assert live.calls == 4  # from the cache, which now holds the live app's answers
    assert outputs(tmp_path / "after.json") == ["new answer to one", "new answer to two"]
    assert CACHED_ALL + "." in after.output


@pytest.mark.parametrize("selection", ["shard", "filter-failing"])
def test_no_cache_refreshes_the_cache_with_a_shard_or_filter_failing(
    live: App, tmp_path: Path, selection: str
) -> None:
    suite = config(tmp_path, live, expected="new")
    assert run(suite, "-o", tmp_path / "old.json").exit_code == 1  # the old app fails "new"
    live.version = "new"
    assert run(suite, "-o", tmp_path / "stale.json").exit_code == 1  # the stale cache still does
    flags = ["--shard", "1/1"] if selection == "shard" else ["--filter-failing", tmp_path / "stale.json"]
    refreshed = run(suite, *flags, "--no-cache", "-o", tmp_path / "fresh.json")
    assert refreshed.exit_code == 0 and live.calls == 4
    # the next plain run compared with the refreshed one: the live app has no regression
    plain = run(
        suite, "--baseline", tmp_path / "fresh.json", "--fail-on", "regressions", "-o", tmp_path / "p.json"
    )
    assert plain.exit_code == 0 and live.calls == 4 and CACHED_ALL + "." in plain.output
    assert report(tmp_path / "p.json")["results"]["stats"]["successes"] == 2


def test_the_python_api_says_and_refreshes_as_the_cli_does(live: App, tmp_path: Path) -> None:
    suite = config(tmp_path, live)
    evalh.evaluate(suite)
    live.version = "new"
    stale = evalh.evaluate(suite)
    assert (stale.cache_share.from_cache, stale.cache_share.outputs) == (2, 2)
    assert stale.cache_summary == "2 of 2 outputs from the cache; cache=False calls the providers"
    fresh = evalh.evaluate(suite, cache=False)
    assert fresh.cache_share.mode is CacheMode.REFRESH and fresh.cache_share.from_cache == 0
    assert [row.output for row in fresh.rows] == ["new answer to one", "new answer to two"]
    again = evalh.evaluate(suite)
    assert [row.output for row in again.rows] == ["new answer to one", "new answer to two"]
    assert live.calls == 4


def test_repeat_turns_the_cache_off_and_says_so(live: App, tmp_path: Path) -> None:
    result = evalh.evaluate(config(tmp_path, live), repeat=2)
    assert result.cache_share.mode is CacheMode.OFF
    assert result.cache_summary == "0 of 4 outputs from the cache; the cache is off for this run"


def test_recorded_outputs_are_not_counted(tmp_path: Path) -> None:
    result = evalh.evaluate({"tests": [{"output": "hi", "assert": [{"type": "contains", "value": "hi"}]}]})
    assert result.cache_share.outputs == 0 and result.cache_summary is None
    assert "outputs from the cache" not in result.to_markdown()


def test_validate_warns_of_latency_checks_with_the_cache_on(live: App, tmp_path: Path) -> None:
    suite = config(tmp_path, live)
    checked = CliRunner().invoke(app, ["validate", str(suite)])
    assert checked.exit_code == 0
    assert (
        f"{suite} tests[0].assert[1]: the suite has 2 latency assertions and the cache is on"
        in checked.output
    )
    assert "--no-cache" in checked.output
    assert CliRunner().invoke(app, ["validate", str(suite), "--strict"]).exit_code == 2
    text = suite.read_text(encoding="utf-8") + "evaluateOptions: {cache: false}\n"
    suite.write_text(text, encoding="utf-8")
    quiet = CliRunner().invoke(app, ["validate", str(suite)])
    assert quiet.exit_code == 0 and "the cache is on" not in quiet.output
    assert live.calls == 0


@pytest.mark.parametrize(
    "provider",
    [
        "echo",
        "exec:echo hi",
        "{id: 'http://127.0.0.1:9/app'}",  # http is cached only with cache: true
        "{id: openai:chat:app, config: {apiKey: sk-x, temperature: 0.7}}",  # sampling: not cached
        "{id: openai:chat:app, config: {apiKey: sk-x, cache: false}}",
    ],
)
def test_validate_is_quiet_when_no_provider_under_test_can_answer_from_the_cache(
    tmp_path: Path, provider: str
) -> None:
    suite = tmp_path / "evalh.yaml"
    suite.write_text(
        f"prompts: [hi]\nproviders: [{provider}]\ntests:\n  - assert: [{{type: latency, threshold: 500}}]\n",
        encoding="utf-8",
    )
    checked = CliRunner().invoke(app, ["validate", str(suite), "--strict"])
    assert checked.exit_code == 0, checked.output
    assert "the cache is on" not in checked.output


def test_cache_info_says_how_long_entries_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_TTL", "3600")
    shown = CliRunner().invoke(app, ["cache", "info"])
    assert shown.exit_code == 0 and "entries are read for 3,600 s after they are written" in shown.output
    monkeypatch.setenv("EVALH_CACHE_TTL", "-1")
    refused = CliRunner().invoke(app, ["cache", "info"])
    assert refused.exit_code == 2 and "EVALH_CACHE_TTL: must be a number of seconds above 0" in refused.output


def test_a_bad_ttl_is_refused_before_the_run_is_recorded(
    live: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_CACHE_TTL", "soon")
    refused = CliRunner().invoke(app, ["run", str(config(tmp_path, live)), "--no-progress-bar"])
    assert refused.exit_code == 2 and "EVALH_CACHE_TTL: must be a number of seconds" in refused.output
    assert live.calls == 0
    listed = CliRunner().invoke(app, ["runs", "list"])
    assert "running" not in listed.output and "eval-" not in listed.output


@pytest.mark.parametrize("body", [{"user": "{{ user }}", "q": "{{ prompt }}"}, {"all": "{{ vars | dump }}"}])
def test_an_http_reply_is_cached_per_request_not_per_prompt(
    loopback: LoopbackServer, body: dict[str, str]
) -> None:
    # one prompt, two users in the body: two requests, two answers, also when read back from the cache
    loopback.route("POST", "/app", lambda request: Reply.json({"out": f"for {request.json}"}))
    suite = {
        "prompts": ["same question"],
        "providers": [
            {"id": f"{loopback.url}/app", "config": {"cache": True, "body": body, "responsePath": "out"}}
        ],
        "tests": [
            {"vars": {"user": name}, "assert": [{"type": "icontains", "value": name}]}
            for name in ("ada", "bob")
        ],
    }
    for _run in range(2):
        result = evalh.evaluate(suite, max_concurrency=1)
        assert [row.status.value for row in result.rows] == ["PASS", "PASS"], [r.output for r in result.rows]
    assert len(loopback.requests) == 2  # the second run came from the cache, per user


def test_an_http_reply_is_cached_per_env_value_its_request_reads(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tenant (or a token) comes from the environment: another value is another request
    loopback.route("POST", "/app", lambda request: Reply.json({"out": f"for {request.header('x-tenant')}"}))
    headers = {"X-Tenant": "{{ env.TENANT }}"}
    provider = {
        "id": f"{loopback.url}/app",
        "config": {"cache": True, "headers": headers, "responsePath": "out"},
    }
    for tenant in ("alice", "bob", "alice"):
        monkeypatch.setenv("TENANT", tenant)
        suite = {
            "prompts": ["hi"],
            "providers": [provider],
            "tests": [{"assert": [{"type": "icontains", "value": tenant}]}],
        }
        result = evalh.evaluate(suite)
        assert [row.status.value for row in result.rows] == ["PASS"], [row.output for row in result.rows]
    assert len(loopback.requests) == 2  # alice again came from the cache
