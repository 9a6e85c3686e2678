"""The assertion registry fills once, whole, even when two runs in one process ask first at the same time
(evalh.evaluate in threads): no thread sees a half-filled registry and calls a known type unknown."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import threading
    from evalh.assertions.registry import get_assertion

    names = ["contains", "similar", "llm-rubric", "is-json", "rouge-n", "context-recall"]
    barrier = threading.Barrier(len(names))
    found = {}

    def ask(name):
        barrier.wait()
        found[name] = get_assertion(name) is not None

    threads = [threading.Thread(target=ask, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(sorted(name for name, known in found.items() if not known))
    """
)


def test_threads_asking_first_all_find_every_type() -> None:
    # a fresh interpreter: the registry is empty until the first question
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
