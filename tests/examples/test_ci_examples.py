"""The CI examples work (issue 13): examples/ci/github-actions.yml and gitlab-ci.yml are parsed and their
shard and merge jobs run here, offline, as the CI systems would run them: each shard in its own
directory with its matrix value (GitHub's ``matrix.shard`` / ``strategy.job-total``, GitLab's
``CI_NODE_INDEX`` / ``CI_NODE_TOTAL``), its artifacts carried to the merge job's directory, steps after
a failure skipped unless ``if: ${{ !cancelled() }}`` (nothing is cancelled here).

What stands in for the CI system: ``actions/checkout`` copies examples/, ``actions/setup-python`` and
``pip install evalh`` lines are skipped (this environment has evalh), ``upload-artifact`` and
``download-artifact`` copy files, secrets are empty. Any other action or ``${{ }}`` expression fails the
test, so the workflow cannot grow a step this test does not run.
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "examples" / "ci" / "github-actions.yml"
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci.yml"
_EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
AFTER_FAILURE = "${{ !cancelled() }}"  # runs when an earlier step or job failed, not when cancelled

FAILING_SUITE = """
description: a suite with a failure
tests:
  - {description: one, output: Paris, assert: [{type: icontains, value: paris}]}
  - {description: two, output: Lyon, assert: [{type: icontains, value: paris}]}
  - {description: three, output: Paris is, assert: [{type: contains, value: Paris}]}
  - {description: four, output: Nice, assert: [{type: equals, value: Nice}]}
"""


def environment(**extra: str) -> dict[str, str]:
    """This process's environment (its isolated cache and run store) with this venv's ``evalh`` first."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "NO_COLOR": "1", **extra}


def bash(script: str, cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """A step's script as GitHub runs it (``bash --noprofile --norc -eo pipefail``)."""
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]
    return subprocess.run(command, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=300)


def checkout(workdir: Path) -> None:
    shutil.copytree(ROOT / "examples", workdir / "examples", dirs_exist_ok=True)


@dataclass
class GitHubJob:
    """One run of a job of the workflow: its directory, expression context and what its steps did."""

    workdir: Path
    context: dict[str, str]
    env: dict[str, str]
    artifacts: dict[str, list[Path]]
    exits: dict[str, int] = field(default_factory=dict)

    def expand(self, text: Any) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("secrets."):
                return ""
            assert name in self.context, f"the workflow uses ${{{{ {name} }}}}, which this test does not set"
            return self.context[name]

        return _EXPRESSION.sub(value, str(text))

    def run(self, steps: list[dict[str, Any]]) -> None:
        failed = False
        for number, step in enumerate(steps):
            if failed and step.get("if") != AFTER_FAILURE:
                continue
            name = self.expand(step.get("name") or step.get("uses") or step.get("run"))
            if "uses" in step:
                failed |= not self.use(
                    step["uses"], {k: self.expand(v) for k, v in step.get("with", {}).items()}
                )
                continue
            script = self.expand(step["run"])
            if script.startswith("pip install"):
                continue
            env = {**self.env, **{k: self.expand(v) for k, v in step.get("env", {}).items()}}
            done = bash(script, self.workdir, env)
            assert "Traceback" not in done.stderr, done.stderr
            self.exits[f"{number}: {name}"] = done.returncode
            failed |= done.returncode != 0

    def use(self, action: str, given: dict[str, str]) -> bool:
        if action.startswith("actions/checkout@"):
            checkout(self.workdir)
        elif action.startswith("actions/upload-artifact@"):
            files = [self.workdir / line.strip() for line in given["path"].splitlines() if line.strip()]
            present = [path for path in files if path.exists()]
            if given.get("if-no-files-found") == "error" and not present:
                return False
            self.artifacts[given["name"]] = present
        elif action.startswith("actions/download-artifact@"):
            target = self.workdir / given.get("path", ".")
            target.mkdir(parents=True, exist_ok=True)
            assert given.get("merge-multiple") == "True"  # every shard's files in one directory
            for name in fnmatch.filter(self.artifacts, given["pattern"]):
                for path in self.artifacts[name]:
                    shutil.copy(path, target / path.name)
        else:
            assert action.startswith("actions/setup-python@"), f"this test cannot run {action}"
        return True


def run_github_workflow(tmp_path: Path, **overrides: str) -> tuple[list[GitHubJob], GitHubJob]:
    workflow = yaml.safe_load(GITHUB.read_text(encoding="utf-8"))
    variables = {**workflow.get("env", {}), **overrides}
    context = {f"env.{name}": str(value) for name, value in variables.items()}
    artifacts: dict[str, list[Path]] = {}
    shard_job = workflow["jobs"]["shard"]
    values = shard_job["strategy"]["matrix"]["shard"]
    shards = []
    for value in values:
        workdir = tmp_path / f"shard-job-{value}"
        workdir.mkdir()
        job = GitHubJob(
            workdir,
            {**context, "matrix.shard": str(value), "strategy.job-total": str(len(values))},
            environment(**{k: str(v) for k, v in variables.items()}),
            artifacts,
        )
        job.run(shard_job["steps"])
        shards.append(job)
    merge_job = workflow["jobs"]["merge"]
    assert merge_job["needs"] == "shard" and merge_job["if"] == AFTER_FAILURE
    workdir = tmp_path / "merge-job"
    workdir.mkdir()
    summary = tmp_path / "step-summary.md"
    env = environment(GITHUB_STEP_SUMMARY=str(summary), **{k: str(v) for k, v in variables.items()})
    merge = GitHubJob(workdir, context, env, artifacts)
    merge.run(merge_job["steps"])
    return shards, merge


def rows(path: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["results"]["results"]
    return found


def unsharded_rows(tmp_path: Path) -> list[dict[str, Any]]:
    """The rows of the examples' suite run in one job."""
    direct = tmp_path / "unsharded.json"
    command = f"evalh run {ROOT / 'examples' / 'configs' / 'checks.yaml'} -o {direct} --no-write --no-table"
    done = bash(command, tmp_path, environment())
    assert done.returncode == 0, done.stderr
    return rows(direct)


def test_the_github_workflow_shards_and_merges_its_example(tmp_path: Path) -> None:
    shards, merge = run_github_workflow(tmp_path)
    for job in shards:
        assert list(job.exits.values()) == [0], job.exits
    assert set(merge.artifacts) == {"evalh-shard-1", "evalh-shard-2", "evalh-shard-3", "evalh-report"}
    assert list(merge.exits.values()) == [0, 0], merge.exits  # merge, then the job summary
    strip = ("id", "latencyMs", "response")
    merged = rows(merge.workdir / "merged.json")
    assert [{k: v for k, v in row.items() if k not in strip} for row in merged] == [
        {k: v for k, v in row.items() if k not in strip} for row in unsharded_rows(tmp_path)
    ]
    summary = (tmp_path / "step-summary.md").read_text(encoding="utf-8")
    assert summary == (merge.workdir / "summary.md").read_text(encoding="utf-8") and summary.strip()
    assert (merge.workdir / "merged.junit.xml").read_bytes().startswith(b"<?xml")


def test_a_failing_suite_fails_the_merge_job_only_and_still_writes_the_summary(tmp_path: Path) -> None:
    suite = tmp_path / "failing.yaml"
    suite.write_text(FAILING_SUITE, encoding="utf-8")
    shards, merge = run_github_workflow(tmp_path, EVALH_CONFIG=str(suite))
    for job in shards:  # exit 1 of a shard is the merge's to report
        assert list(job.exits.values()) == [0], job.exits
    codes = list(merge.exits.values())
    assert codes == [1, 0], merge.exits  # the merge fails; the summary step runs all the same
    assert "two" in (tmp_path / "step-summary.md").read_text(encoding="utf-8")
    assert "evalh-report" in merge.artifacts


def test_a_broken_config_fails_the_shard_jobs(tmp_path: Path) -> None:
    suite = tmp_path / "broken.yaml"
    suite.write_text("tests:\n  - assert: [{type: no-such-type}]\n", encoding="utf-8")
    shards, merge = run_github_workflow(tmp_path, EVALH_CONFIG=str(suite))
    for job in shards:  # the step fails (evalh's 2 read as "not 1"), and no report is uploaded
        assert list(job.exits.values()) == [1], job.exits
        assert not any(name.startswith("evalh-shard") for name in job.artifacts)
    assert next(iter(merge.exits.values())) == 2  # no shard report: merge names what is missing


def test_the_gitlab_pipeline_shards_and_merges_its_example(tmp_path: Path) -> None:
    pipeline = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    variables = {k: str(v) for k, v in pipeline["variables"].items()}
    evals, merge = pipeline["evals"], pipeline["evals-merge"]
    assert merge["needs"] == ["evals"] and merge["when"] == "always"
    merge_dir = tmp_path / "merge"
    merge_dir.mkdir()
    total = int(evals["parallel"])
    for index in range(1, total + 1):
        workdir = tmp_path / f"evals-{index}"
        workdir.mkdir()
        checkout(workdir)
        env = environment(CI_NODE_INDEX=str(index), CI_NODE_TOTAL=str(total), **variables)
        for line in evals["script"]:
            if not line.startswith("pip install"):
                done = bash(line, workdir, env)
                assert done.returncode == 0, done.stderr
        for pattern in evals["artifacts"]["paths"]:
            for path in glob.glob(pattern, root_dir=workdir):
                shutil.copy(workdir / path, merge_dir / path)
    for line in merge["script"]:
        if not line.startswith("pip install"):
            done = bash(line, merge_dir, environment(**variables))
            assert done.returncode == 0, done.stderr
    for path in [*merge["artifacts"]["paths"], merge["artifacts"]["reports"]["junit"]]:
        assert (merge_dir / path).is_file(), path
    merged = [(row["testIdx"], row["success"]) for row in rows(merge_dir / "merged.json")]
    assert merged == [(row["testIdx"], row["success"]) for row in unsharded_rows(tmp_path)]


def test_every_github_upload_can_be_re_run() -> None:
    # upload-artifact@v4 refuses a name already in the workflow run, and a re-run is the same run
    workflow = yaml.safe_load(GITHUB.read_text(encoding="utf-8"))
    uploads = [
        step
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("actions/upload-artifact@")
    ]
    assert len(uploads) == 2
    for step in uploads:
        assert step["with"].get("overwrite") is True, step
