"""docs/scale.md's configs (examples/scale/): each validates, the docs quote them word for word, and each
runs against a loopback OpenAI-compatible server standing in for TEI, vLLM or Ollama, whose counters
show the batch and concurrency settings are honoured."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply, Request

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "scale").glob("*.yaml"))
SCALE_DOC = ROOT / "docs" / "scale.md"
_BASE_URL = re.compile(r"apiBaseUrl: (http://localhost:\d+/v1)")


def test_there_are_configs_for_tei_vllm_and_ollama() -> None:
    assert [path.name for path in EXAMPLES] == ["ollama.yaml", "tei-embeddings.yaml", "vllm-judge.yaml"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_each_scale_config_validates(example: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(example)])
    assert result.exit_code == 0, result.output
    assert "valid" in result.output


def test_the_docs_quote_the_validated_configs_word_for_word() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", SCALE_DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    texts = [path.read_text(encoding="utf-8") for path in EXAMPLES]
    assert len(blocks) >= 3
    for block in blocks:
        assert any(block in text for text in texts), (
            f"docs/scale.md quotes a config no example holds:\n{block}"
        )


class _Counter:
    """Requests in flight per path, their peak, and the largest embedding batch seen."""

    def __init__(self) -> None:
        self.active: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.largest_batch = 0
        self._lock = threading.Lock()

    def enter(self, path: str, batch: int = 0) -> None:
        with self._lock:
            self.active[path] = self.active.get(path, 0) + 1
            self.peak[path] = max(self.peak.get(path, 0), self.active[path])
            self.largest_batch = max(self.largest_batch, batch)

    def leave(self, path: str) -> None:
        with self._lock:
            self.active[path] -= 1


def _serve_both(loopback: LoopbackServer, counter: _Counter) -> None:
    def embeddings(request: Request) -> Reply:
        texts = request.json["input"]
        counter.enter("embeddings", len(texts))
        try:  # every text gets the same vector: cosine 1, so every `similar` passes
            data = [{"index": i, "embedding": [0.6, 0.8]} for i in range(len(texts))]
            return Reply.json(
                {"data": data, "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}}
            )
        finally:
            counter.leave("embeddings")

    def chat(request: Request) -> Reply:
        counter.enter("chat")
        try:
            verdict = json.dumps({"pass": True, "score": 1, "reason": "meets the rubric"})
            message = {"role": "assistant", "content": verdict}
            return Reply.json({"choices": [{"index": 0, "message": message}], "usage": {"total_tokens": 1}})
        finally:
            counter.leave("chat")

    loopback.route("POST", "/v1/embeddings", embeddings)
    loopback.route("POST", "/v1/chat/completions", chat)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_each_scale_config_runs_against_a_loopback_server(
    example: Path, loopback: LoopbackServer, tmp_path: Path
) -> None:
    text = example.read_text(encoding="utf-8")
    assert _BASE_URL.search(text), "each config names its server's base URL"
    config = tmp_path / example.name
    config.write_text(_BASE_URL.sub(f"apiBaseUrl: {loopback.url}/v1", text), encoding="utf-8")
    counter = _Counter()
    _serve_both(loopback, counter)
    report = tmp_path / "report.json"
    command = ["run", str(config), "--no-cache", "--no-table", "--no-write", "--strict", "-o", str(report)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    stats = json.loads(report.read_text(encoding="utf-8"))["results"]["stats"]
    assert stats["errors"] == 0 and stats["failures"] == 0 and stats["successes"] > 0
    batch_sizes = [int(size) for size in re.findall(r"batchSize: (\d+)", text)]
    assert counter.largest_batch <= min(batch_sizes, default=10**6)
    assert (counter.peak.get("embeddings", 0) > 0) == ("embedding:" in text)
    assert (counter.peak.get("chat", 0) > 0) == ("llm-rubric" in text)
