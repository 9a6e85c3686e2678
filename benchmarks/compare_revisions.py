"""Do two revisions of evalh write the same reports and exit codes? The check behind a change that must not
change behaviour (a refactor, a move): every example config and the generated benchmark suites are run at
both revisions with every report format, and the reports are compared byte for byte once what differs
between two runs of the same code is masked: run, trace and span ids, timestamps, durations (and the
padding that aligns a duration in a console table). The JSON and JSON Lines reports are rewritten in
``json.dumps``' form first (their values are compared, not their whitespace), and the JSON Lines rows,
written as they finish, are put in the order of the rows' identity (test, prompt, provider, repeat).

    python benchmarks/compare_revisions.py --base main [--head HEAD] [--sizes 100,1000] [--sets A,B,C,D]
        [--keep]

Each revision is checked out in a temporary git worktree and run with ``python -m evalh`` from it; the
benchmark suites (A-D at each size; D only up to 100 tests) come from ``gen_configs.py`` beside this script
and talk to a loopback OpenAI-compatible server started here (embeddings and a judge that passes every
answer). Prints one line per config and report, then the counts; exits 1 if anything differs, so two
revisions of the same code exit 0 (``--base main --head main`` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from bench_vs_promptfoo import EmbeddingsHandler  # the scripts run from benchmarks/, which is on sys.path
from gen_configs import write_suites

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("json", "xml", "csv", "md", "html", "yaml", "jsonl")
# ids, timestamps and durations: what differs between two runs of the same revision
VOLATILE = [
    (re.compile(r"eval\\?-\S{1,8}?\\?-\d{4}\\?-\d{2}\\?-\d{2}T\d{2}\\?:\d{2}\\?:\d{2}"), "<eval-id>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r'"?\b[0-9a-f]{32}\b"?'), "<id>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (
        re.compile(
            r"(\w*(Latency|latency|Ms|[dD]uration|[tT]ime|[tT]imestamp|createdAt|elapsed)\w*\W{0,3}[:=]\W{0,3})[\d.e-]+"
        ),
        r"\1<n>",
    ),
    # OpenTelemetry span ids (random per run): 16 hex digits standing alone, not a number's decimals
    (re.compile(r'"?(?<![\w.])[0-9a-f]{16}(?![\w.])"?'), "<span-id>"),
    # with the spaces around it: a console table pads a duration to its column's width
    (re.compile(r" *\b\d+(\.\d+)? ?(ms|s)\b *"), " <dur> "),
]
ROW_IDENTITY = ("testIdx", "promptIdx", "providerIdx", "repeatIdx")


class Handler(EmbeddingsHandler):
    """bench_vs_promptfoo's embeddings server, plus a judge that passes every answer (set D)."""

    def do_POST(self) -> None:
        if self.path.endswith("/embeddings"):
            super().do_POST()
            return
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        verdict = json.dumps({"pass": True, "score": 1, "reason": "meets the rubric"})
        reply = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": verdict}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        payload = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _row_identity(row: object) -> tuple[str, ...]:
    """Where a JSON Lines row sits in the run: its indices (and provider), whatever order it finished in."""
    if not isinstance(row, dict):
        return (json.dumps(row),)
    provider = row.get("provider")
    provider_id = provider.get("id") if isinstance(provider, dict) else provider
    return (*(f"{row.get(key, -1)!s:>12}" for key in ROW_IDENTITY), str(provider_id))


def _spaced(report: str, text: str) -> str:
    """A JSON or JSON Lines report in compact ``json.dumps`` form: its whitespace (orjson's since issue
    29, json's before) is not compared, its values are. JSON Lines rows are written as they finish (their
    order is the providers' timing): they are put in the order of the rows' identity."""
    try:
        if report.endswith(".jsonl"):
            rows = sorted((json.loads(line) for line in text.splitlines() if line), key=_row_identity)
            return "\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
        if report.endswith(".json"):
            return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        pass  # not JSON: compared as it is
    return text


def masked(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def comparable(report: str, text: str) -> str:
    """The text of ``report`` (a file name: its suffix says the format) as the two revisions' are compared."""
    return masked(_spaced(report, text))


def run(revision_dir: Path, config: Path, out: Path, env: dict[str, str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    outputs = [str(out / f"report.{fmt}") for fmt in FORMATS]
    command = [sys.executable, "-m", "evalh", "run", str(config), "--no-write", "--no-cache", "-o", *outputs]
    environment = {**env, "PYTHONPATH": str(revision_dir), "EVALH_HOME": str(out / "home")}
    done = subprocess.run(command, cwd=config.parent, env=environment, capture_output=True, timeout=1800)
    (out / "stdout.txt").write_bytes(done.stdout)
    (out / "stderr.txt").write_bytes(done.stderr)
    return done.returncode


def configs(suites: Path) -> list[Path]:
    examples = sorted((ROOT / "examples" / "configs").glob("*.yaml"))
    return [*examples, ROOT / "examples" / "calibration" / "similar.yaml", *sorted(suites.glob("*.yaml"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--sizes", default="100,1000", help="the benchmark suites' sizes (none: '')")
    parser.add_argument("--sets", default="A,B,C,D", help="the benchmark suites' sets (gen_configs.py)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print it")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    work = Path(tempfile.mkdtemp(prefix="evalh-revisions-"))
    suites = work / "suites"
    sizes = [int(size) for size in args.sizes.split(",") if size]
    write_suites(str(suites), sizes, args.sets.split(","), base_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALH_", "PROMPTFOO_", "PYTHON"))}
    env.update({"OPENAI_API_KEY": "sk-compare-revisions", "OPENAI_BASE_URL": base_url, "NO_COLOR": "1"})
    trees = {}
    for name, revision in (("base", args.base), ("head", args.head)):
        trees[name] = work / name
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(trees[name]), revision],
            check=True,
        )
    differ = same = 0
    try:
        for config in configs(suites):
            codes = {
                name: run(tree, config, work / "out" / name / config.stem, env)
                for name, tree in trees.items()
            }
            label = config.relative_to(ROOT) if config.is_relative_to(ROOT) else config.name
            if codes["base"] != codes["head"]:
                print(f"DIFFERS {label}: exit {codes['base']} -> {codes['head']}")
                differ += 1
            for report in ["stdout.txt", *(f"report.{fmt}" for fmt in FORMATS)]:
                texts = []
                for name in trees:
                    path = work / "out" / name / config.stem / report
                    exists = path.exists()
                    texts.append(
                        comparable(report, path.read_text(errors="replace")) if exists else "<missing>"
                    )
                if texts[0] == texts[1]:
                    same += 1
                else:
                    differ += 1
                    print(f"DIFFERS {label} {report}")
            print(f"checked {label} (exit {codes['base']})")
    finally:
        for tree in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"{same} reports identical, {differ} differ ({args.base} -> {args.head}); work folder {work}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
