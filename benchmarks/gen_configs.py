#!/usr/bin/env python3
"""Generate the issue's promptfoo-format benchmark suites (A-D, any size).

A copy of the session's shared generator (``/work/shared/bench/gen_configs.py``, issue 29), kept here so
that the benchmarks never import anything from outside the repository; only its layout changed (formatted,
typed): for the same arguments it writes the same files, byte for byte.

  python benchmarks/gen_configs.py --out DIR [--sizes 100,1000,5000] [--sets A,B,C,D]
                                   [--base-url http://127.0.0.1:8765/v1] [--seed 1]

Writes DIR/<SET>_<N>.yaml (+ DIR/manifest.json). Every config uses the `echo`
provider and the prompt "{{answer}}", so the output of test i is vars.answer.

  A  deterministic: equals, contains, icontains, regex, starts-with,
     levenshtein on every test; is-json on tests whose answer is JSON (~10%)
  B  similar (threshold 0.8, value "{{expected}}") with the embedding provider
     overridden to openai:embedding:text-embedding-3-small at --base-url
  C  A + B
  D  llm-rubric only, grader openai:chat:gpt-4o-mini at --base-url (stub answers pass)

Texts: ~40% expected == answer, ~35% paraphrase (synonyms / reordering),
~25% unrelated; ~10% JSON answers; 30% of tests repeat an earlier (answer,
expected) pair exactly (--repeat), so ~30% of the texts are repeated.
Deterministic for a given --seed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from typing import Any

SUBJ = [
    "the cat", "a small dog", "the engineer", "our team", "the old library", "my neighbor",
    "the server", "the committee", "a young student", "the pilot", "the farmer", "the museum guide",
    "the new manager", "a tired nurse", "the local bakery", "the city council", "the robot",
    "the orchestra", "a curious child", "the support desk",
]  # fmt: skip
VERB = [
    "quickly repaired", "carefully examined", "painted", "visited", "ignored", "described",
    "measured", "cleaned", "sold", "borrowed", "photographed", "rebuilt", "delivered", "reviewed",
    "moved", "explained", "tested", "ordered", "found", "lost",
]  # fmt: skip
OBJ = [
    "the broken fence", "a red bicycle", "the annual report", "the kitchen table", "an old map",
    "the wooden bridge", "the quarterly budget", "a blue umbrella", "the garden shed",
    "the database backup", "a heavy suitcase", "the concert hall", "the science project",
    "a torn jacket", "the company website", "the mountain trail", "a silver watch",
    "the train schedule", "the coffee machine", "a stack of letters",
]  # fmt: skip
TAIL = [
    "before dinner", "on monday morning", "during the storm", "without any help", "last summer",
    "in the city center", "after the meeting", "for the second time", "near the harbor",
    "at midnight", "with great care", "despite the rain",
]  # fmt: skip
SYN = {
    "quickly": "rapidly", "repaired": "fixed", "carefully": "thoroughly", "examined": "inspected",
    "small": "little", "painted": "coloured", "visited": "went to see", "ignored": "overlooked",
    "described": "portrayed", "cleaned": "washed", "sold": "traded away", "borrowed": "took out",
    "photographed": "took pictures of", "rebuilt": "reconstructed", "delivered": "brought",
    "reviewed": "checked", "moved": "relocated", "explained": "clarified", "tested": "tried out",
    "ordered": "requested", "found": "discovered", "lost": "misplaced", "broken": "damaged",
    "old": "ancient", "red": "crimson", "annual": "yearly", "team": "group", "tired": "exhausted",
    "new": "recently hired", "heavy": "weighty", "curious": "inquisitive", "great": "much",
    "storm": "tempest", "midnight": "twelve at night", "help": "assistance", "child": "kid",
    "map": "chart", "bicycle": "bike", "report": "summary",
}  # fmt: skip
LABELS = ["positive", "negative", "neutral", "urgent", "spam", "billing", "shipping", "other"]


def sentence(r: random.Random) -> str:
    s = f"{r.choice(SUBJ)} {r.choice(VERB)} {r.choice(OBJ)} {r.choice(TAIL)}"
    return s[0].upper() + s[1:] + "."


def paraphrase(r: random.Random, s: str) -> str:
    out = []
    for w in s.rstrip(".").split():
        lw = w.lower()
        out.append(SYN[lw] if lw in SYN and r.random() < 0.6 else lw)
    p = " ".join(out)
    if r.random() < 0.4:  # move the trailing phrase to the front
        for t in TAIL:
            if p.endswith(" " + t):
                p = t + ", " + p[: -len(t) - 1]
                break
    if r.random() < 0.3:
        p = r.choice(["Apparently, ", "In short, ", "Yes: ", "As reported, "]) + p
    return p[0].upper() + p[1:] + "."


def make_pair(r: random.Random, k: int) -> tuple[str, str, str, bool]:
    """(answer, expected, category, is_json) of unique pair ``k``."""
    kind = r.random()
    is_json = r.random() < 0.10
    cat = "exact" if kind < 0.40 else "para" if kind < 0.75 else "unrelated"
    if is_json:
        exp_obj = {"id": k, "label": r.choice(LABELS), "text": sentence(r)}
        expected = json.dumps(exp_obj)
        if kind < 0.40:
            answer = expected
        elif kind < 0.75:
            answer = json.dumps({"id": k, "label": exp_obj["label"], "text": paraphrase(r, exp_obj["text"])})
        else:
            answer = json.dumps({"id": k + 1, "label": r.choice(LABELS), "text": sentence(r)})
        return answer, expected, cat, True
    expected = sentence(r)
    if kind < 0.40:
        answer = expected
    elif kind < 0.75:
        answer = paraphrase(r, expected)
    else:
        answer = sentence(r)
    return answer, expected, cat, False


def pick_word(r: random.Random, text: str) -> str:
    ws = [w.strip('.,:"{}') for w in text.split()]
    ws = [w for w in ws if len(w) >= 4 and w.isalpha()]
    return r.choice(ws) if ws else "the"


def det_asserts(r: random.Random, expected: str, is_json: bool) -> list[dict[str, Any]]:
    w = pick_word(r, expected)
    a: list[dict[str, Any]] = [
        {"type": "equals", "value": "{{expected}}"},
        {"type": "contains", "value": w.lower()},
        {"type": "icontains", "value": pick_word(r, expected).upper()},
        {"type": "regex", "value": r"^[A-Z{][^\n]*[.}]$"},
        {"type": "starts-with", "value": expected[:3]},
        {"type": "levenshtein", "value": "{{expected}}", "threshold": 10},
    ]
    if is_json:
        a.append({"type": "is-json"})
    return a


def build_tests(n: int, seed: int = 1, repeat: float = 0.30) -> list[dict[str, Any]]:
    r = random.Random(seed * 1000003 + n)
    n_unique = max(1, round(n * (1 - repeat)))
    uniq = [make_pair(r, k) for k in range(n_unique)]
    seq = list(range(n_unique)) + [r.randrange(n_unique) for _ in range(n - n_unique)]
    r.shuffle(seq)
    tests = []
    for i, k in enumerate(seq):
        answer, expected, cat, is_json = uniq[k]
        rr = random.Random(seed * 7919 + k)  # same pair -> same assertions
        tests.append(
            {"i": i, "pair": k, "answer": answer, "expected": expected, "cat": cat,
             "is_json": is_json, "det": det_asserts(rr, expected, is_json)}
        )  # fmt: skip
    return tests


def config_for(set_name: str, n: int, tests: list[dict[str, Any]], base_url: str) -> dict[str, Any]:
    emb = {"id": "openai:embedding:text-embedding-3-small", "config": {"apiBaseUrl": base_url}}
    txt = {"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": base_url}}
    cfg: dict[str, Any] = {
        "description": f"evaluator benchmark set {set_name}, N={n}",
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
    }
    if set_name in ("B", "C", "D"):
        cfg["defaultTest"] = {"options": {"provider": {"embedding": emb, "text": txt}}}
    out = []
    for t in tests:
        asserts = []
        if set_name in ("A", "C"):
            asserts += t["det"]
        if set_name in ("B", "C"):
            asserts.append({"type": "similar", "value": "{{expected}}", "threshold": 0.8})
        if set_name == "D":
            asserts.append({"type": "llm-rubric", "value": "The answer says the same thing as: {{expected}}"})
        out.append(
            {
                "description": f"t{t['i']} pair{t['pair']} {t['cat']}",
                "vars": {"answer": t["answer"], "expected": t["expected"]},
                "assert": asserts,
            }
        )
    cfg["tests"] = out
    return cfg


def dump_yaml(obj: Any, path: str) -> None:
    try:
        import yaml

        text = yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=1000)
    except ImportError:  # JSON is valid YAML
        text = json.dumps(obj, indent=1, ensure_ascii=False)
    with open(path, "w") as f:
        f.write(text)


def write_suites(
    out: str,
    sizes: list[int],
    sets: list[str],
    base_url: str,
    seed: int = 1,
    repeat: float = 0.30,
    d_max: int = 100,
) -> dict[str, Any]:
    """Write every <SET>_<N>.yaml and manifest.json into ``out``; the manifest (name -> facts, path)."""
    os.makedirs(out, exist_ok=True)
    manifest: dict[str, Any] = {}
    for n in sizes:
        tests = build_tests(n, seed, repeat)
        texts = [t["answer"] for t in tests] + [t["expected"] for t in tests]
        info = {
            "n": n,
            "unique_pairs": len({t["pair"] for t in tests}),
            "texts": len(texts),
            "unique_texts": len(set(texts)),
            "cats": {c: sum(t["cat"] == c for t in tests) for c in ("exact", "para", "unrelated")},
            "json_tests": sum(t["is_json"] for t in tests),
        }
        for s in sets:
            if s == "D" and n > d_max:
                continue
            path = os.path.join(out, f"{s}_{n}.yaml")
            dump_yaml(config_for(s, n, tests, base_url), path)
            manifest[f"{s}_{n}"] = dict(info, set=s, path=path)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--sets", default="A,B,C,D")
    ap.add_argument("--base-url", default="http://127.0.0.1:8765/v1")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=float, default=0.30)
    ap.add_argument("--d-max", type=int, default=100, help="largest N for set D (llm-rubric)")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    manifest = write_suites(a.out, sizes, a.sets.split(","), a.base_url, a.seed, a.repeat, a.d_max)
    for k, v in manifest.items():
        print(k, {x: v[x] for x in ("unique_pairs", "texts", "unique_texts", "cats", "json_tests")})


if __name__ == "__main__":
    main()
