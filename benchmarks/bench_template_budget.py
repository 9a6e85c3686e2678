"""Hostile templates against the render budget: CPU seconds, peak RSS and the outcome of each.

Each template renders in a child process with an address-space limit (``--memory-gb``, default 3) and a
wall-clock limit (``--seconds``, default 30), so that the figures of code without a budget (run it with
PYTHONPATH pointing at an older checkout) are measured without exhausting the machine.

    python benchmarks/bench_template_budget.py [--seconds 30] [--memory-gb 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HOSTILE = {
    "nested loops": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "replace": "{{ ('a' * 100000) | replace('a', 'b' * 100000) }}",
    "center in a loop": "{% for i in range(100000) %}{{ '' | center(99999) }}{% endfor %}",
    "map ... join": "{{ range(100000) | map('string') | join('x' * 100000) }}",
    "doubling": "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s | length }}",
    "exponential macro": "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
    "{{ f(60) }}",
    "ordinary prompt": "{% for item in items %}- {{ item.name | title }}: {{ item.text | trim }}\n"
    "{% endfor %}",
}

_CHILD = """
import json, resource, signal, sys, time
from evalh.errors import EvalhError
from evalh.templating import render_template

def stop(*_):
    raise TimeoutError

signal.signal(signal.SIGALRM, stop)
signal.setitimer(signal.ITIMER_REAL, float(sys.argv[2]))
items = [{"name": f"item {i}", "text": " some text " * 20} for i in range(200)]
try:
    text = render_template(sys.argv[1], {"items": items}, where="bench.yaml:1:1 tests[0].vars.q")
    outcome = f"rendered {len(text):,} characters"
except EvalhError as error:
    outcome = "error: " + error.render()[:150]
except MemoryError:
    outcome = "MemoryError (at the address-space limit)"
except TimeoutError:
    outcome = f"still running after {sys.argv[2]} s (stopped)"
signal.setitimer(signal.ITIMER_REAL, 0)
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu = usage.ru_utime + usage.ru_stime
print(json.dumps({"outcome": outcome, "cpu": cpu, "rss_mb": usage.ru_maxrss / 1024}))
"""


def measure(template: str, seconds: float, memory_gb: float) -> str:
    limit = int(memory_gb * 1024**3)

    def confine() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, template, str(seconds)],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        preexec_fn=confine,
        env=os.environ,
    )
    wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if not lines:
        return f"died: {done.stderr.strip()[-120:]}"
    figures = json.loads(lines[-1])
    cpu, rss = figures["cpu"], figures["rss_mb"]
    return f"cpu {cpu:6.2f} s  wall {wall:6.2f} s  peak RSS {rss:6.0f} MB  {figures['outcome']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--memory-gb", type=float, default=3.0)
    arguments = parser.parse_args()
    for name, template in HOSTILE.items():
        print(f"{name:18} {measure(template, arguments.seconds, arguments.memory_gb)}", flush=True)


if __name__ == "__main__":
    main()
