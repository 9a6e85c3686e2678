"""``evalh calibrate`` through the CLI: the shipped example on the bundled model, hand-made cases
whose thresholds are known, and the messages for labels that cannot calibrate anything."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "calibration" / "similar.yaml"


def _calibrate(*args: str) -> Any:
    return CliRunner().invoke(app, ["calibrate", *args])


def _by_assertion(report: Path) -> dict[tuple[str, str], dict[str, Any]]:
    document = json.loads(report.read_text(encoding="utf-8"))
    return {(c["assertion"], c["provider"]): c for c in document["calibrations"]}


def _levenshtein_config(tmp_path: Path, passing: int, failing: int, label: str = "fail") -> Path:
    """Pass-labelled outputs 0-2 edits from the reference, fail-labelled ones 5-9 edits away."""
    tests = [
        f'  - {{output: "{"abcdefghij"[: 10 - i % 3]}", metadata: {{label: pass}}}}' for i in range(passing)
    ] + [
        f'  - {{output: "{"zzzzzzzzz"[: 5 + i % 5]}", metadata: {{label: {label}}}}}' for i in range(failing)
    ]
    config = tmp_path / "lev.yaml"
    config.write_text(
        "defaultTest:\n  assert:\n"
        "    - {type: levenshtein, value: abcdefghij, threshold: 4}\n"
        "    - {type: not-levenshtein, value: abcdefghij, threshold: 4}\n"
        "tests:\n" + "\n".join(tests) + "\n",
        encoding="utf-8",
    )
    return config


def test_distance_thresholds_are_known_on_a_separable_hand_made_set(tmp_path: Path) -> None:
    report = tmp_path / "c.json"
    result = _calibrate(str(_levenshtein_config(tmp_path, 10, 10)), "-o", str(report), "--bootstrap", "50")
    assert result.exit_code == 0, result.output
    lev = _by_assertion(report)["levenshtein", "configured"]
    assert lev["direction"] == "lower" and lev["auc"] == 1.0
    # pass-labelled distances are 0, 1, 2; the strictest perfect threshold is 2 edits
    assert lev["suggested"]["bestAccuracy"]["threshold"] == 2.0
    assert lev["suggested"]["bestYoudenJ"]["threshold"] == 2.0
    assert lev["suggested"]["lowestAtTargetPrecision"]["threshold"] == 2.0
    current = lev["atCurrentThreshold"]
    assert (current["truePass"], current["falsePass"], current["trueFail"], current["falseFail"]) == (
        10,
        0,
        10,
        0,
    )
    # not-levenshtein passes far from the reference: its direction flips, and these labels rank it worst
    negated = _by_assertion(report)["not-levenshtein", "configured"]
    assert negated["direction"] == "higher" and negated["auc"] == 0.0


def test_too_few_labels_are_said_plainly_and_exit_1(tmp_path: Path) -> None:
    result = _calibrate(str(_levenshtein_config(tmp_path, 4, 3)), "--write")
    assert result.exit_code == 1, result.output
    assert "too few labels (4 pass, 3 fail)" in result.output
    assert "threshold: " not in result.output  # no meaningless suggestion


def test_one_label_only_is_said_plainly(tmp_path: Path) -> None:
    result = _calibrate(str(_levenshtein_config(tmp_path, 12, 0)))
    assert result.exit_code == 1 and "every labelled test is 'pass'" in result.output


def test_a_label_other_than_pass_or_fail_is_a_config_error(tmp_path: Path) -> None:
    result = _calibrate(str(_levenshtein_config(tmp_path, 10, 10, label="maybe")))
    assert result.exit_code == 2
    assert (
        "metadata.label" in result.stderr and "'maybe'" in result.stderr and "Traceback" not in result.stderr
    )


@pytest.mark.slow
def test_the_shipped_example_calibrates_offline_on_the_bundled_model(tmp_path: Path) -> None:
    report, plot = tmp_path / "c.json", tmp_path / "c.svg"
    args = [str(EXAMPLE), "-o", str(report), "--plot", str(plot), "--write", "--bootstrap", "200"]
    result = _calibrate(*args, "--provider", "local", "--provider", "fake")
    assert result.exit_code == 0, result.output
    found = _by_assertion(report)
    cosine, distance = found["similar", "local"], found["similar:euclidean", "local"]
    assert cosine["labels"] == {"pass": 30, "fail": 36}
    # the docs quote this figure: paraphrases separate, same-topic contradictions and wrong facts do not
    assert 0.6 < cosine["auc"] < 0.85
    low, high = cosine["aucInterval95"]
    assert low < cosine["auc"] < high
    # unit vectors: the distance ranks pairs exactly as the cosine does, in the other direction
    assert distance["auc"] == pytest.approx(cosine["auc"])
    assert ("similar", "fake") in found  # the second provider, side by side
    assert ET.parse(plot).getroot().tag.endswith("svg")
    assert "threshold: " in result.output and "<- current threshold" in result.output


def test_a_png_plot_without_matplotlib_says_how_to_get_it(tmp_path: Path) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("matplotlib is installed: the PNG is drawn")
    config = _levenshtein_config(tmp_path, 10, 10)
    result = _calibrate(str(config), "--plot", str(tmp_path / "c.png"), "--bootstrap", "20")
    assert result.exit_code == 2 and "pip install matplotlib" in result.stderr
    assert "Traceback" not in result.stderr
    other = _calibrate(str(config), "--plot", str(tmp_path / "c.pdf"), "--bootstrap", "20")
    assert other.exit_code == 2 and ".svg or .png" in other.stderr
