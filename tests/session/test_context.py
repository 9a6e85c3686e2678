"""A run carries its own context: two runs at once in one process see only their own environment overlay,
secrets and notice policy, and ``os.environ`` is never written (STYLE habit 19, issue 24).

Each pair of runs meets at a loopback server that answers neither before both have called it: the runs
are then both in flight, and the server's thread (a third one) reads ``os.environ`` meanwhile."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import Any

import evalh
from evalh.config.dotenv import dotenv_environment
from tests.loopback import LoopbackServer, Reply, Request

KEYS = {"alpha": "sk-context-alpha-1111", "bravo": "sk-context-bravo-2222"}
NAMES = ("CTX_LABEL", "CTX_TEST_KEY")
PROVIDER = "import os\n\ndef call_api(prompt, options, context):\n    return os.environ['CTX_LABEL']\n"


class Meeting:
    """The loopback's chat route: waits for both runs, notes ``os.environ`` then, echoes what it got."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=60)
        self.process_env: list[dict[str, str | None]] = []
        self.auth: dict[str, str | None] = {}

    def __call__(self, request: Request) -> Reply:
        self.barrier.wait()  # the other run is in flight too
        self.process_env.append({name: os.environ.get(name) for name in NAMES})
        prompt = request.json["messages"][-1]["content"]
        self.auth[prompt] = request.header("Authorization")
        content = f"{prompt} (auth: {request.header('Authorization')})"  # a careless server echoes the key
        return Reply.json({"choices": [{"message": {"content": content}, "finish_reason": "stop"}]})


def own_label(prompt: str) -> str | None:
    """A Python callable provider: it runs on a thread of evalh's, and reads the run's environment."""
    return evalh.getenv("CTX_LABEL")


def suite(url: str, provider_file: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "prompts": ["label {{ env.CTX_LABEL }}"],
        "providers": [
            {"id": "openai:chat:m", "config": {"apiBaseUrl": f"{url}/v1", "apiKeyEnvar": "CTX_TEST_KEY"}},
            {"id": f"python:{provider_file}"},  # a worker process: it reads the run's environment
            own_label,
        ],
        "tests": [{"description": "sees its own label"}],
    }
    if env is not None:
        config["env"] = env
    return config


def check_apart(results: dict[str, evalh.RunResult], meeting: Meeting, tmp_path: Path) -> None:
    for label, result in results.items():
        chat, worker, callable_row = result.rows
        assert chat.output.startswith(f"label {label} (auth: ")  # its own env value in the template
        assert meeting.auth[f"label {label}"] == f"Bearer {KEYS[label]}"  # its own key was sent
        assert worker.output == label  # the python worker was given the run's environment
        assert callable_row.output == label  # the callable's thread was given the run's context
        report = (tmp_path / f"{label}.json").read_text(encoding="utf-8")
        assert "[REDACTED]" in report  # its own key, echoed back, is redacted
        assert not [key for key in KEYS.values() if key in report]  # and the other's never came in
    assert meeting.process_env == [dict.fromkeys(NAMES)] * 2  # os.environ untouched while both ran
    assert not [name for name in NAMES if name in os.environ]


def test_two_threads_with_their_own_env_files_stay_apart(loopback: LoopbackServer, tmp_path: Path) -> None:
    meeting = Meeting()
    loopback.route("POST", "/v1/chat/completions", meeting)
    provider = tmp_path / "provider.py"
    provider.write_text(PROVIDER, encoding="utf-8")
    results: dict[str, evalh.RunResult] = {}

    def run(label: str) -> None:
        env_file = tmp_path / f"{label}.env"
        env_file.write_text(f"CTX_LABEL={label}\nCTX_TEST_KEY={KEYS[label]}\n", encoding="utf-8")
        with dotenv_environment([env_file]):  # what evalh run --env-file does
            outputs = [str(tmp_path / f"{label}.json")]
            results[label] = evalh.evaluate(suite(loopback.url, provider), outputs=outputs)

    threads = [threading.Thread(target=run, args=(label,)) for label in KEYS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert set(results) == set(KEYS)
    check_apart(results, meeting, tmp_path)


def test_gathered_aevaluate_calls_with_their_own_env_maps_stay_apart(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    meeting = Meeting()
    loopback.route("POST", "/v1/chat/completions", meeting)
    provider = tmp_path / "provider.py"
    provider.write_text(PROVIDER, encoding="utf-8")

    async def both() -> list[evalh.RunResult]:
        return await asyncio.gather(
            *(
                evalh.aevaluate(
                    suite(loopback.url, provider, {"CTX_LABEL": label, "CTX_TEST_KEY": key}),
                    outputs=[str(tmp_path / f"{label}.json")],
                )
                for label, key in KEYS.items()
            )
        )

    results = dict(zip(KEYS, asyncio.run(both()), strict=True))
    check_apart(results, meeting, tmp_path)


def test_strict_mode_of_one_run_does_not_make_another_strict(loopback: LoopbackServer) -> None:
    inside, release = threading.Event(), threading.Event()

    def hold(_request: Request) -> Reply:
        inside.set()  # the strict run is now inside its run, waiting for this answer
        release.wait(60)
        return Reply.json({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})

    loopback.route("POST", "/v1/chat/completions", hold)
    strict = {
        "evaluateOptions": {"strict": True},
        "prompts": ["hi"],
        "providers": [{"id": "openai:chat:m", "config": {"apiBaseUrl": f"{loopback.url}/v1", "apiKey": "k"}}],
        "tests": [{}],
    }
    lenient = {"prompts": ["hello {{ missing }}"], "providers": ["echo"], "tests": [{}]}
    strict_results: list[evalh.RunResult] = []
    strict_run = threading.Thread(target=lambda: strict_results.append(evalh.evaluate(strict)))
    strict_run.start()
    try:
        assert inside.wait(60)
        # without strict mode an undefined variable renders empty, with a warning (as in promptfoo)
        lenient_result = evalh.evaluate(lenient)
    finally:
        release.set()
        strict_run.join(timeout=60)
    assert lenient_result.rows[0].output == "hello "
    assert strict_results[0].ok


def test_each_run_starts_its_programs_with_its_own_environment(tmp_path: Path) -> None:
    """Runs one after the other: a python worker left idle by the first never serves the second with
    the first's environment, and an exec: program is given the run's environment (not os.environ's)."""
    provider = tmp_path / "provider.py"
    provider.write_text(PROVIDER, encoding="utf-8")
    program = tmp_path / "program.py"
    program.write_text("import os\nprint(os.environ['CTX_LABEL'], end='')\n", encoding="utf-8")
    outputs = {}
    for label in KEYS:
        config = {
            "env": {"CTX_LABEL": label},
            "prompts": ["p"],
            "providers": [f"python:{provider}", f"exec:{sys.executable} {program}"],
            "tests": [{}],
        }
        outputs[label] = [row.output for row in evalh.evaluate(config).rows]
    assert outputs == {label: [label, label] for label in KEYS}
    assert "CTX_LABEL" not in os.environ
