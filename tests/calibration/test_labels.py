"""``evalh calibrate CONFIG --labels REF``: a run recorded by ``evalh run`` in a real store, rated through the
store's API, then calibrated from those ratings. The figures are checked against counts made here by hand
(the confusion matrix, the Mann-Whitney AUC over every pass x fail pair, Cohen's kappa from its marginals),
and every way the labels cannot be had is an exit 2 that says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.store.runs import open_store

REFERENCE = "abcdefghij"


def _far(distance: int) -> str:
    """An answer ``distance`` edits from REFERENCE (its first 10 - distance letters, then nothing)."""
    return REFERENCE[: 10 - distance]


# (output, distance, the person's verdict); distance 4 is the config's threshold (passes at or below)
CASES: list[tuple[str, int, bool]] = [
    *[(_far(d), d, True) for d in (0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6)],
    *[(_far(d), d, False) for d in (3, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9)],
]


def _config(
    tmp_path: Path, cases: list[tuple[str, int, bool]], extra: dict[int, dict[str, Any]] | None = None
) -> Path:
    """One test per case: the echo provider answers the case's output; a levenshtein assertion scores it.
    Tests are told apart by their description (two cases may share an output)."""
    config = {
        "description": "labels",
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {"assert": [{"type": "levenshtein", "value": REFERENCE, "threshold": 4}]},
        "tests": [
            {"description": f"case {i}", "vars": {"answer": output}, **(extra or {}).get(i, {})}
            for i, (output, _, _) in enumerate(cases)
        ],
    }
    path = tmp_path / "labels.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _run(path: Path) -> list[dict[str, Any]]:
    """``evalh run`` records the config in the store; its rows, in test order."""
    result = CliRunner().invoke(app, ["run", str(path), "--no-table"])
    assert result.exit_code in (0, 1), result.output
    with open_store() as store:
        rows = list(store.iter_rows("latest"))
    return sorted(rows, key=lambda row: row["testIdx"])


def _rate(rows: list[dict[str, Any]], verdicts: dict[int, bool]) -> None:
    with open_store() as store:
        for index, passed in verdicts.items():
            store.rate("latest", rows[index]["id"], passed=passed, comment=f"case {index}")


def _calibrate(path: Path, tmp_path: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    report = tmp_path / "c.json"
    report.unlink(missing_ok=True)
    result = CliRunner().invoke(
        app, ["calibrate", str(path), "-o", str(report), "--bootstrap", "50", "--no-histogram", *args]
    )
    document = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return result, document


def _hand_auc(distances: list[int], labels: list[bool]) -> float:
    """P(a pass-labelled answer is closer than a fail-labelled one), ties half: every pair counted."""
    passing = [d for d, y in zip(distances, labels, strict=True) if y]
    failing = [d for d, y in zip(distances, labels, strict=True) if not y]
    wins = sum((p < f) + 0.5 * (p == f) for p in passing for f in failing)
    return wins / (len(passing) * len(failing))


def test_the_ratings_of_the_latest_run_are_the_labels(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    rows = _run(path)
    _rate(rows, {i: verdict for i, (_, _, verdict) in enumerate(CASES)})
    result, document = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 0, result.output
    (lev,) = document["calibrations"]
    distances, labels = [d for _, d, _ in CASES], [v for _, _, v in CASES]
    assert lev["labels"] == {"pass": labels.count(True), "fail": labels.count(False)}
    assert lev["auc"] == pytest.approx(_hand_auc(distances, labels))
    # at the config's threshold (4 edits): a rated-pass answer within 4 edits is a true pass, and so on
    within = [d <= 4 for d in distances]
    current = lev["atCurrentThreshold"]
    assert current["truePass"] == sum(w and y for w, y in zip(within, labels, strict=True)) == 9
    assert current["falsePass"] == sum(w and not y for w, y in zip(within, labels, strict=True)) == 1
    assert current["trueFail"] == sum(not w and not y for w, y in zip(within, labels, strict=True)) == 10
    assert current["falseFail"] == sum(not w and y for w, y in zip(within, labels, strict=True)) == 2
    assert document["labels"]["rated"] == len(CASES) and document["labels"]["unlabelled"] == 0
    assert "Labels from the ratings of run " in result.output


def test_a_rating_overrides_metadata_label_and_unrated_rows_keep_theirs(tmp_path: Path) -> None:
    # the first 21 tests say `label: fail` in the config; the person rates the first 20 rows, and says which
    extra = {i: {"metadata": {"label": "fail"}} for i in range(21)}
    path = _config(tmp_path, CASES, extra)
    rows = _run(path)
    _rate(rows, {i: CASES[i][2] for i in range(20)})
    result, document = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 0, result.output
    counts = document["labels"]
    rated_pass = sum(CASES[i][2] for i in range(20))
    assert counts["rated"] == 20 and counts["overMetadataLabel"] == 20
    assert counts["disagreeingWithMetadataLabel"] == rated_pass == 11  # rated pass over `label: fail`
    assert counts["fromMetadataLabel"] == 1 and counts["unlabelled"] == len(CASES) - 21
    labels = [CASES[i][2] for i in range(20)] + [False]
    (lev,) = document["calibrations"]
    assert lev["labels"] == {"pass": labels.count(True), "fail": labels.count(False)}
    assert lev["auc"] == pytest.approx(_hand_auc([d for _, d, _ in CASES[:21]], labels))
    assert "20 rated row(s) (20 over a metadata.label, 11 of them with the other verdict)" in result.output
    # without --labels the same config calibrates on its metadata labels alone: all fail, nothing to fit
    plain, _ = _calibrate(path, tmp_path)
    assert plain.exit_code == 1 and "every labelled test is 'fail'" in plain.output


def test_ratings_match_rows_by_identity_not_position(tmp_path: Path) -> None:
    """The config's tests reordered (and one added) after the run: each rating still labels its own test."""
    path = _config(tmp_path, CASES)
    rows = _run(path)
    _rate(rows, {i: verdict for i, (_, _, verdict) in enumerate(CASES)})
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["tests"] = [*reversed(config["tests"]), {"description": "new", "vars": {"answer": "abc"}}]
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result, document = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 0, result.output
    (lev,) = document["calibrations"]
    assert lev["auc"] == pytest.approx(_hand_auc([d for _, d, _ in CASES], [v for _, _, v in CASES]))
    assert document["labels"]["rated"] == len(CASES) and document["labels"]["unlabelled"] == 1


def test_an_exported_rated_run_labels_and_a_changed_output_is_left_out(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    rows = _run(path)
    _rate(rows, {i: verdict for i, (_, _, verdict) in enumerate(CASES)})
    export = tmp_path / "rated.json"
    shown = CliRunner().invoke(app, ["runs", "show", "latest", "-o", str(export)])
    assert shown.exit_code == 0, shown.output
    exported = json.loads(export.read_text(encoding="utf-8"))
    # the answer rated in row 0 is not the one this config's run gives now
    first = next(row for row in exported["results"]["results"] if row["testIdx"] == 0)
    first["response"]["output"] = "something else"
    export.write_text(json.dumps(exported), encoding="utf-8")
    result, document = _calibrate(path, tmp_path, "--labels", str(export))
    assert result.exit_code == 0, result.output
    assert document["labels"]["rated"] == len(CASES) - 1 and document["labels"]["outputChanged"] == 1
    (lev,) = document["calibrations"]
    kept = CASES[1:]
    assert lev["auc"] == pytest.approx(_hand_auc([d for _, d, _ in kept], [v for _, _, v in kept]))
    assert "1 rated row(s) left out: the output is not the one rated" in result.output


def test_an_unknown_run_is_exit_2(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    _run(path)
    result, document = _calibrate(path, tmp_path, "--labels", "nosuchrun")
    assert result.exit_code == 2 and document == {}
    assert "--labels: no run 'nosuchrun'" in result.stderr and "Traceback" not in result.stderr
    beyond, _ = _calibrate(path, tmp_path, "--labels", "latest~5")
    assert beyond.exit_code == 2 and "no run 'latest~5'" in beyond.stderr


def test_a_run_without_ratings_says_how_to_rate(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    _run(path)
    result, _ = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "has no rated row" in message and "--labels" in message
    assert "evalh view" in message and "evalh runs rate" in message


def test_another_configs_run_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    other = _config(tmp_path / "other", CASES)
    _rate(_run(other), {0: True, 1: False})
    config = yaml.safe_load(other.read_text(encoding="utf-8"))
    for test in config["tests"]:
        test["description"] = test["description"].replace("case", "my case")
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    # `latest` finds no run of this config, so the newest run of any config: another config's
    result, _ = _calibrate(mine, tmp_path, "--labels", "latest")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "no row of run " in message and "another config's run" in message


def test_rated_rows_the_config_no_longer_has_are_exit_2(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    rows = _run(path)
    _rate(rows, {0: True, 1: True})
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["tests"] = config["tests"][2:]  # the two rated tests are gone; the others are the same rows
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result, _ = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "none of the 2 rated row(s)" in message and f"{len(CASES) - 2} of its unrated rows are" in message


def test_latest_is_this_configs_newest_run_though_another_ran_since(tmp_path: Path) -> None:
    path = _config(tmp_path, CASES)
    _rate(_run(path), {i: verdict for i, (_, _, verdict) in enumerate(CASES)})
    (tmp_path / "other").mkdir()
    _run(_config(tmp_path / "other", CASES[:3]))  # the store's newest run is now another config's
    result, document = _calibrate(path, tmp_path, "--labels", "latest")
    assert result.exit_code == 0, result.output
    assert document["labels"]["rated"] == len(CASES)
