"""evalh's pytest plugin through pytester: real pytest runs (in-process) over real evalh configs."""

from __future__ import annotations

import json
import textwrap
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml
from typer.testing import CliRunner

# Imported here, before pytester's in-process runs: each run drops the modules it imported, and numpy
# (which the run imports) cannot be imported twice in one process.
import evalh.providers.openai
import evalh.pytest.items  # noqa: F401
from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply, Request

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
# An environment installed before the entry point existed has not registered it yet: name the plugin
# explicitly there (naming it where the entry point loads it too would register it twice).
REGISTERED = any(point.value == "evalh.pytest" for point in entry_points(group="pytest11"))
PLUGIN = [] if REGISTERED else ["-p", "evalh.pytest"]

SUITE = """
prompts: ["Hi {{name}}"]
providers: [echo]
tests:
  - description: greets ada
    vars: {name: Ada}
    assert: [{type: contains, value: Ada}]
  - description: greets bob
    vars: {name: Bob}
    assert: [{type: contains, value: Robert}, {type: icontains, value: bob}]
  - description: greets cy
    vars: {name: Cy}
    assert: [{type: equals, value: Hi Cy}]
"""


def _write(pytester: pytest.Pytester, name: str, text: str = SUITE) -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_directory_of_evals_gives_one_item_per_row_with_the_assertions_in_the_failure(
    pytester: pytest.Pytester,
) -> None:
    _write(pytester, "evals/evalh.yaml")
    _write(pytester, "evals/more.evalh.yaml", SUITE.replace("Hi {{name}}", "Hello {{name}}"))
    _write(pytester, "evals/other.yaml")  # not an eval by name: not collected
    result = pytester.runpytest(*PLUGIN, "evals", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=3)  # "equals Hi Cy" fails for the Hello prompt
    result.stdout.fnmatch_lines(
        [
            "*FAIL: *",
            "*[[]FAIL] contains (score 0): *Robert*",
            "*[[]PASS] icontains (score 1)*",
            "*output: Hi Bob*",
        ]
    )
    listed = pytester.runpytest(*PLUGIN, "evals", "--collect-only", "-q", "-p", "no:cacheprovider")
    listed.stdout.fnmatch_lines(["evals/evalh.yaml::greets ada (Hi {{name}} | echo)"])


def test_k_filters_by_description_and_x_stops_at_the_first_failure(pytester: pytest.Pytester) -> None:
    _write(pytester, "evalh.yaml")
    chosen = pytester.runpytest(*PLUGIN, "-k", "ada or cy", "-p", "no:cacheprovider")
    chosen.assert_outcomes(passed=2, deselected=1)
    stopped = pytester.runpytest(*PLUGIN, "-x", "-p", "no:cacheprovider")
    stopped.assert_outcomes(passed=1, failed=1)  # cy never ran


def test_evalh_config_runs_one_suite_whatever_its_name(pytester: pytest.Pytester) -> None:
    _write(pytester, "evalh.yaml")
    named = _write(pytester, "checks/suite.yaml", SUITE.replace("Robert", "Bob"))
    result = pytester.runpytest(*PLUGIN, "--evalh-config", str(named), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_junitxml_holds_one_case_per_row(pytester: pytest.Pytester) -> None:
    _write(pytester, "evalh.yaml")
    pytester.runpytest(*PLUGIN, "--junitxml", "out.xml", "-p", "no:cacheprovider")
    cases = [case for suite in JUnitXml.fromfile(str(pytester.path / "out.xml")) for case in suite]
    assert len(cases) == 3
    failed = [case for case in cases if any(isinstance(r, Failure) for r in case.result)]
    assert [case.name for case in failed] == ["greets bob (Hi {{name}} | echo)"]


def test_last_failed_reruns_only_the_failed_row(pytester: pytest.Pytester) -> None:
    # a prompt with brackets and "::": pytest would read them in the node id as parameters / parts
    _write(
        pytester,
        "evalh.yaml",
        SUITE.replace('["Hi {{name}}"]', '[{raw: "Hi {{name}}", label: "[greet]:: v1"}]'),
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=2, failed=1)
    again = pytester.runpytest(*PLUGIN, "--lf")
    outcomes = again.parseoutcomes()  # the passed rows: deselected, or (this pytest) not collected
    assert (outcomes["failed"], outcomes.get("passed", 0)) == (1, 0)
    again.stdout.fnmatch_lines(
        ["*rerun previous 1 failure*", "FAILED evalh.yaml::greets bob ((greet): v1 | echo)*"]
    )


def test_xdist_runs_the_rows_across_workers(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    _write(pytester, "evalh.yaml")
    result = pytester.runpytest_subprocess(*PLUGIN, "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)


def test_a_bad_config_is_a_collection_error_with_its_located_message(pytester: pytest.Pytester) -> None:
    _write(pytester, "evalh.yaml", SUITE.replace("type: equals", "type: equal"))
    result = pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*evalh.yaml:*tests[[]2[]].assert[[]0[]].type: unknown assertion type 'equal'*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_the_files_collected_are_configurable(pytester: pytest.Pytester) -> None:
    _write(pytester, "suite.eval.yaml")
    pytester.makeini("[pytest]\nevalh_files = *.eval.yaml\n")
    pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider").assert_outcomes(passed=2, failed=1)


def test_the_plugin_is_declared_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"evalh": "evalh.pytest"}


def test_evalh_shard_collects_the_share_evalh_run_shard_runs(pytester: pytest.Pytester) -> None:
    _write(pytester, "evalh.yaml")
    shares = []
    for k in (1, 2):
        listed = pytester.runpytest(
            *PLUGIN, "--evalh-shard", f"{k}/2", "--collect-only", "-q", "-p", "no:cacheprovider"
        )
        shares.append({line.split("::")[1] for line in listed.outlines if line.startswith("evalh.yaml::")})
    assert shares[0] and shares[1] and not shares[0] & shares[1]
    assert {name.split(" (")[0] for name in shares[0] | shares[1]} == {
        "greets ada",
        "greets bob",
        "greets cy",
    }
    cli = CliRunner().invoke(
        app, ["run", str(pytester.path / "evalh.yaml"), "--shard", "1/2", "-o", "s.json", "--no-write"]
    )
    ran = {
        row["description"] for row in json.loads((Path.cwd() / "s.json").read_text())["results"]["results"]
    }
    assert {name.split(" (")[0] for name in shares[0]} == ran, cli.output
    bad = pytester.runpytest(*PLUGIN, "--evalh-shard", "3/2", "-p", "no:cacheprovider")
    bad.stdout.fnmatch_lines(["*--evalh-shard: '3/2' names share 3 of 2*"])  # the flag pytest was given


def test_an_empty_share_passes_as_evalh_run_shard_does(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        evalh="""
        prompts: ["{{q}}"]
        providers: [echo]
        tests:
          - {description: only, vars: {q: hi}, assert: [{type: contains, value: hi}]}
        """,
    )
    outcomes = []
    for k in range(1, 6):  # one test, five CI jobs: four have nothing to do and must not fail
        result = pytester.runpytest(*PLUGIN, "--evalh-shard", f"{k}/5", "-p", "no:cacheprovider")
        outcomes.append((result.ret, result.parseoutcomes().get("passed", 0)))
    assert sorted(outcomes, key=lambda item: -item[1]) == [(0, 1), (0, 0), (0, 0), (0, 0), (0, 0)]
    nothing = pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider", "-k", "nosuchtest")
    assert nothing.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # without --evalh-shard, pytest's rule


def test_a_failed_rows_report_holds_no_secret_value(pytester: pytest.Pytester) -> None:
    secret = "sk-live-plugin-0123456789abcdef"
    _write(
        pytester,
        "evalh.yaml",
        f"""
        prompts: ["token {{{{apiKey}}}}"]
        providers: [echo]
        tests:
          - description: leaks
            vars: {{apiKey: {secret}}}
            assert: [{{type: equals, value: "{{{{apiKey}}}}"}}]
        """,
    )
    result = pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider", "--junitxml=junit.xml")
    result.assert_outcomes(failed=1)
    shown = "\n".join(result.outlines)
    assert "output: token [REDACTED]" in shown
    assert secret not in shown and secret not in (pytester.path / "junit.xml").read_text(encoding="utf-8")


def test_the_summary_says_how_many_outputs_came_from_the_cache_and_no_cache_refreshes_it(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    answer = {"text": "old"}

    def reply(request: Request) -> Reply:
        message = {"role": "assistant", "content": answer["text"]}
        return Reply.json({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

    loopback.route("POST", "/v1/chat/completions", reply)
    _write(
        pytester,
        "evalh.yaml",
        f"""
        prompts: ["Hi {{{{name}}}}"]
        providers:
          - {{id: "openai:chat:app", config: {{apiBaseUrl: "{loopback.url}/v1", apiKey: sk-t-123456}}}}
        tests:
          - vars: {{name: Ada}}
            assert: [{{type: contains, value: new}}, {{type: latency, threshold: 600000}}]
        """,
    )
    pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider").assert_outcomes(failed=1)
    answer["text"] = "new"
    stale = pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider")
    stale.assert_outcomes(failed=1)  # the cached answer; latency is skipped, not an error
    stale.stdout.fnmatch_lines(["evalh: 1 of 1 outputs from the cache; --evalh-no-cache calls the providers"])
    fresh = pytester.runpytest(*PLUGIN, "--evalh-no-cache", "-p", "no:cacheprovider")
    fresh.assert_outcomes(passed=1)
    fresh.stdout.fnmatch_lines(
        ["evalh: 0 of 1 outputs from the cache; --evalh-no-cache called the providers*"]
    )
    pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert len(loopback.requests) == 2


# issue 23: a not- assertion's failure names the type as written
NEGATED_SUITE = """
prompts: ["Hi {{name}}"]
providers: [echo]
tests:
  - description: no shouting
    vars: {name: BOB}
    assert: [{type: not-icontains, value: bob}]
"""


def test_a_negated_failure_names_not_icontains(pytester: pytest.Pytester) -> None:
    (pytester.path / "evalh.yaml").write_text(textwrap.dedent(NEGATED_SUITE), encoding="utf-8")
    result = pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]FAIL] not-icontains (score 0): *(not-icontains expects the opposite)*"])
    result.stdout.no_fnmatch_line("*[[]FAIL] icontains*")
