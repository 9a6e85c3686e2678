"""One oversized provider reply: peak RSS and CPU of the call, and what the provider answered.

A loopback server answers an OpenAI-style chat call with ``--megabytes`` (default 200) of content; an
``exec:`` program prints as much. Each runs in a child process, so its peak RSS is its own.

    python benchmarks/bench_reply_cap.py [--megabytes 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import asyncio, json, resource, sys
sys.path.append(sys.argv[3])  # after PYTHONPATH: the evalh measured is the one PYTHONPATH names
from evalh.model import ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.registry import build_provider

size = int(float(sys.argv[2]) * 1024 * 1024)
if sys.argv[1].startswith("http"):
    spec = ProviderSpec(id="openai:chat:m", config={"apiBaseUrl": sys.argv[1] + "/v1", "apiKey": "k"})
else:
    program = f"import sys; sys.stdout.write('x' * {size})"
    spec = ProviderSpec(id=f"exec:{sys.executable} -c \\"{program}\\"")
provider = build_provider(spec)

async def go():
    try:
        return await provider.complete("hello", CallContext())
    finally:
        if hasattr(provider, "aclose"):
            await provider.aclose()

response = asyncio.run(go())
usage = resource.getrusage(resource.RUSAGE_SELF)
answer = f"error: {response.error[:90]}" if response.error else f"output of {len(response.output):,} chars"
cpu = usage.ru_utime + usage.ru_stime
print(json.dumps({"rss_mb": usage.ru_maxrss / 1024, "cpu": cpu, "answer": answer}))
"""


_SERVER = """
import json, sys, time
sys.path.append(sys.argv[2])
from tests.loopback import LoopbackServer, Reply
content = "x" * int(float(sys.argv[1]) * 1024 * 1024)
body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
reply = Reply(body=body, headers={"Content-Type": "application/json"})
server = LoopbackServer()
server.route("POST", "/v1/chat/completions", lambda _request: reply)
print(server.url, flush=True)
time.sleep(3600)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=200.0)
    megabytes = parser.parse_args().megabytes
    # the server in a process of its own, and every child run from /tmp: a child's peak RSS is its own,
    # and it imports the evalh that PYTHONPATH names (not the one in the working directory)
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(megabytes), str(ROOT)],
        stdout=subprocess.PIPE,
        text=True,
        cwd="/tmp",
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        for kind, target in (("http", url), ("exec", "exec")):
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, target, str(megabytes), str(ROOT)],
                capture_output=True,
                text=True,
                check=False,
                cwd="/tmp",
            )
            lines = done.stdout.strip().splitlines()
            if not lines:
                print(f"{kind}: failed: {done.stderr.strip()[-300:]}")
                continue
            figures = json.loads(lines[-1])
            print(
                f"{kind:5} {megabytes:g} MB reply: peak RSS {figures['rss_mb']:6.0f} MB, "
                f"cpu {figures['cpu']:5.2f} s, {figures['answer']}"
            )
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
