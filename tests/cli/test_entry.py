"""The ``evalh`` program ends with ``os._exit`` (evalh/cli/entry.py): nothing an ordinary exit does is
lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CONFIG = """
    prompts: ["{{answer}}"]
    providers: [echo]
    tests:
      - vars: {answer: refund issued}
        assert: [{type: contains, value: refund}]
      - vars: {answer: nothing}
        assert: [{type: contains, value: refund}]
"""


def _program(tmp_path: Path, *argv: str, before: str = "") -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{before}\nfrom evalh.cli.entry import run_program\n"
    code += f"sys.argv = ['evalh', *{argv!r}]\nrun_program()\n"
    env = {"EVALH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )


def test_a_run_keeps_its_exit_code_output_reports_store_and_exit_functions(tmp_path: Path) -> None:
    (tmp_path / "evalh.yaml").write_text(textwrap.dedent(CONFIG), encoding="utf-8")
    before = "import atexit\natexit.register(lambda: sys.stdout.write('exit functions ran\\n'))"
    run = _program(tmp_path, "run", "-o", "out.json", "-o", "out.jsonl", "--no-cache", before=before)
    assert run.returncode == 1, run.stderr
    assert run.stdout.rstrip().endswith("exit functions ran")  # run, and flushed after the table
    assert run.stdout.startswith("Results") and "| echo " in run.stdout, run.stdout
    assert (tmp_path / "out.json").read_text(encoding="utf-8").rstrip().endswith("}")
    assert len((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    listed = _program(tmp_path, "runs", "list")
    assert listed.returncode == 0 and "1/2 passed" in listed.stdout, listed.stdout + listed.stderr


def test_a_user_error_keeps_its_message_and_exit_code(tmp_path: Path) -> None:
    config = "prompts: [x]\nproviders: [echo]\ntests: [{assert: [{type: nope}]}]\n"
    (tmp_path / "evalh.yaml").write_text(config, encoding="utf-8")
    validate = _program(tmp_path, "validate", "evalh.yaml")
    assert validate.returncode == 2 and "nope" in validate.stderr, validate.stderr


def test_a_reader_that_closes_stdout_ends_the_program_quietly(tmp_path: Path) -> None:
    # `evalh runs list | head -1`: the pipe's reader is gone before evalh writes
    (tmp_path / "evalh.yaml").write_text(textwrap.dedent(CONFIG), encoding="utf-8")
    assert _program(tmp_path, "run", "--no-table", "evalh.yaml").returncode == 1
    code = "import sys\nfrom evalh.cli.entry import run_program\n"
    code += "sys.argv = ['evalh', 'runs', 'list']\nrun_program()\n"
    env = {"EVALH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as closed:
        ended = subprocess.run(
            [sys.executable, "-c", code],
            stdout=closed,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    assert ended.returncode == 141, ended.stderr
    assert ended.stderr == ""  # no "internal error", no "Exception ignored"
