"""A run reference or a JSON report file, read as one JSON report dict (for diff, import, the viewer),
and ``--baseline``: the run a new run of a config is compared with.

``REF`` is a JSON report file when it names an existing file or ends in ``.json``; otherwise a stored
run (``latest``, ``latest~N``, a run id or its prefix). As a baseline, ``latest`` / ``latest~N`` count
the runs of the same config only (its path and description, as the store records them); when that
config has none, the newest run of any config is taken, and said to be another config's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh.common.notices import warn
from evalh.errors import ConfigError
from evalh.reports.codec_check import read_report_file
from evalh.store.compare import RunRows
from evalh.store.runs import RunStore, RunSummary, latest_offset, open_store

__all__ = [
    "Baseline",
    "check_baseline",
    "is_report_file",
    "load_baseline",
    "load_report",
    "read_report_file",
    "run_rows",
]


def is_report_file(ref: str) -> bool:
    """A path rather than a run reference: a ``.json`` name, or anything but a directory there (a device
    or a FIFO is then refused as a report, not looked up as a run id)."""
    if ref.lower().endswith(".json"):
        return True
    try:
        path = Path(ref)
        return path.exists() and not path.is_dir()
    except (OSError, ValueError):  # a NUL, a name too long: not a file, so a run reference
        return False


def load_report(ref: str, store: RunStore | None = None, *, where: str | None = None) -> dict[str, Any]:
    """The JSON report ``ref`` names: a report file, or a run of ``store`` (default: the user's)."""
    if is_report_file(ref):
        return read_report_file(Path(ref), where=where)
    if store is not None:
        return store.load_run(ref)
    with open_store() as opened:
        return opened.load_run(ref)


def run_rows(ref: str, store: RunStore | None, *, where: str | None = None) -> RunRows:
    """The rows ``ref`` names, for a comparison: a report file's (read whole), or a run of ``store``'s,
    read one at a time as they are compared (``store`` stays open meanwhile; None: only files)."""
    if is_report_file(ref) or store is None:
        document = load_report(ref, where=where)
        return RunRows(str(document.get("evalId") or "?"), document["results"]["results"])
    return RunRows(store.resolve(ref).id, store.iter_rows(ref))


@dataclass(frozen=True)
class Baseline:
    """The report a run is compared with. ``other_config``: a stored run of another config (its path or
    description differ), said in a warning; ``guessed``: ``latest`` found no run of this config and
    took another config's, which a regressions gate refuses."""

    report: dict[str, Any]
    other_config: str | None = None  # "description 'A' from /path/a.yaml"
    guessed: bool = False


def load_baseline(
    ref: str, *, config_path: str | None, description: str | None, where: str = "--baseline"
) -> Baseline:
    """The baseline ``ref`` names for a run of the config stored as (``config_path``, ``description``)."""
    if is_report_file(ref):
        return Baseline(read_report_file(Path(ref), where=where))  # named: taken as it is
    with open_store() as store:
        back = latest_offset(ref)
        own = None
        if back is not None:  # this config's latest finished run, else its latest run of any state
            own = store.latest_of(config_path, description, back) or store.latest_of(
                config_path, description, back, complete=False
            )
        summary = own or store.resolve(ref)
        report = store.load_run(summary.id)
    if summary.state != "complete":
        _warn_unfinished(summary)
    same = (summary.config_path, summary.description) == (config_path, description)
    return Baseline(report, None if same else _config_of(summary), guessed=back is not None and not same)


def _warn_unfinished(summary: RunSummary) -> None:
    problem = ConfigError(
        f"the baseline run {summary.id} is {summary.state} ({summary.rows} rows stored): the tests it lacks "
        "compare as new tests, and a new test that fails counts as a new failure",
        where="--baseline",
        hint="Name a run that finished (`evalh runs list` shows each run's state), or run the config once "
        "to the end",
    )
    warn(problem, where="--baseline", subject="an unfinished baseline")


def _config_of(summary: RunSummary) -> str:
    described = f"description {summary.description!r}" if summary.description else "no description"
    return f"{described} from {summary.config_path or 'a config given as data'}"


def check_baseline(baseline: Baseline, ref: str, *, gate: bool) -> None:
    """Say so when ``baseline`` is another config's run: a ConfigError (exit 2) when a regressions
    ``gate`` would rest on a guess (``latest`` found no run of this config), else a warning."""
    if baseline.other_config is None:
        return
    run_id = baseline.report.get("evalId")
    if baseline.guessed and gate:
        raise ConfigError(
            f"{ref} found no stored run of this config, and the newest run ({run_id}, "
            f"{baseline.other_config}) is another config's: --fail-on regressions would compare "
            "different tests",
            where="--baseline",
            hint="Name the baseline explicitly: a run id (`evalh runs list`) or a JSON report; or run this "
            "config once without --fail-on regressions, so that latest finds a run of its own",
        )
    problem = ConfigError(
        f"comparing with run {run_id}, a run of another config ({baseline.other_config})",
        where="--baseline",
        hint="Its tests may differ from this run's; name a run of this config to compare like with like",
    )
    warn(problem, where="--baseline", subject="another config")
