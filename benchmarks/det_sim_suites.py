"""The suites ``det-N`` and ``sim-N`` that ``bench_vs_promptfoo.py`` measured before issue 29's A/C suites.

``det-N`` has N tests with 6-7 deterministic assertions each (``icontains``, ``contains-any``,
``not-contains``, ``regex``, ``not-icontains-any``, a weighted ``equals``, and ``is-json`` on JSON answers);
``sim-N`` adds a ``similar`` assertion scored through an OpenAI-compatible embeddings server at the URL
given. Answers are about 40% exact, 35% paraphrases and 25% unrelated; 10% are JSON; 30% of the (question,
answer) pairs repeat earlier ones. Written as block-style YAML with the tests inline.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

WORDS = str.split(
    "the customer asked about a refund for the order shipped last week and the agent explained policy "
    "delivery times vary by region while support is available every day through chat email or phone "
    "our product stores data securely encrypts backups and offers exports in several common formats"
)
SYNONYMS = {"customer": "client", "asked": "enquired", "order": "parcel", "shipped": "sent", "week": "Monday"}


# -- the suites -----------------------------------------------------------------------------------------


def sentence(generator: random.Random, index: int) -> str:
    words = [generator.choice(WORDS) for _ in range(generator.randint(6, 18))]
    return " ".join(words).capitalize() + f" (case {index})."


def paraphrase(text: str) -> str:
    return " ".join(SYNONYMS.get(word, word) for word in text.split())


def make_row(generator: random.Random, index: int) -> dict[str, Any]:
    """One test's vars: a question, the expected answer and the answer the 'model' gave."""
    question = f"Question {index}: what about case {index}?"
    expected = sentence(generator, index)
    kind = generator.random()
    if kind < 0.40:
        answer = expected
    elif kind < 0.75:
        answer = paraphrase(expected)
    else:
        answer = sentence(generator, index + 1_000_000)
    is_json = generator.random() < 0.10
    if is_json:
        answer = json.dumps({"answer": answer, "case": index})
    return {"question": question, "expected": expected, "answer": answer, "json": is_json}


def make_rows(tests: int, seed: int = 7) -> list[dict[str, Any]]:
    generator = random.Random(seed)
    unique = [make_row(generator, i) for i in range(round(tests * 0.7))]
    rows = unique + [generator.choice(unique) for _ in range(tests - len(unique))]
    generator.shuffle(rows)
    return rows


def deterministic_asserts(row: dict[str, Any]) -> list[dict[str, Any]]:
    case = row["expected"].rsplit("(", 1)[1].rstrip(".)")
    checks: list[dict[str, Any]] = [
        {"type": "icontains", "value": case},
        {"type": "contains-any", "value": ["refund", "order", "parcel", "support", "data"]},
        {"type": "not-contains", "value": "error"},
        {"type": "regex", "value": r"case \d+"},
        {"type": "not-icontains-any", "value": ["as an ai", "cannot help"]},
        {"type": "equals", "value": row["expected"], "weight": 2},
    ]
    if row["json"]:
        checks.append({"type": "is-json"})
    return checks


def write_det_sim_suite(directory: Path, name: str, embed_url: str) -> Path:
    kind, count = name.split("-")
    rows = make_rows(int(count))
    tests = []
    for i, row in enumerate(rows):
        asserts = deterministic_asserts(row)
        if kind == "sim":
            asserts.append({"type": "similar", "value": row["expected"], "threshold": 0.75})
        test: dict[str, Any] = {
            "description": f"test {i}",
            "vars": {"question": row["question"], "expected": row["expected"], "answer": row["answer"]},
            "assert": asserts,
        }
        tests.append(test)
    config: dict[str, Any] = {
        "description": f"bench {name}",
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "tests": tests,
    }
    if kind == "sim":
        embedding = {
            "id": "openai:embedding:text-embedding-3-small",
            "config": {"apiBaseUrl": embed_url, "apiKey": "sk-bench"},
        }
        config["defaultTest"] = {"options": {"provider": {"embedding": embedding}}}
    folder = directory / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(to_yaml(config), encoding="utf-8")
    return path


def to_yaml(value: Any, indent: str = "") -> str:
    """Block-style YAML as people write it, every scalar a JSON literal (which YAML reads the same)."""
    if isinstance(value, dict) and value:
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{indent}{key}:\n{to_yaml(item, indent + '  ')}")
            else:
                lines.append(f"{indent}{key}: {json.dumps(item)}\n")
        return "".join(lines)
    if isinstance(value, list) and value:
        lines = []
        for item in value:
            text = (
                to_yaml(item, indent + "  ") if isinstance(item, (dict, list)) and item else json.dumps(item)
            )
            lines.append(f"{indent}- {text.lstrip()}" + ("" if text.endswith("\n") else "\n"))
        return "".join(lines)
    return json.dumps(value) + "\n"
