"""A run with repeats in the viewer's data and the HTML report: each test's pass rate over its repeats
with its Wilson interval and whether it is flaky, each column's with tests as the unit (checked against
scipy), the same from a stored run read a page at a time, and the part of the app that draws them
inlined only in the reports of runs with repeats."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalh.reports.html import REPEAT_SCRIPT, REPEAT_STYLESHEET, asset, script_bundle, stylesheet
from evalh.reports.viewdata import run_view
from evalh.store import open_store
from evalh.viewer.sources import StoredRuns
from tests.viewer.runs import REPEATED_PASSES, REPEATS
from tests.viewer.test_html_report import _Page, _sha256


def _report(repeated: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(repeated.read_text(encoding="utf-8"))
    return loaded


def _text(passes: int, runs: int, low: float, high: float) -> str:
    return f"{passes}/{runs} {100 * passes / runs:.0f}% [{100 * low:.0f}-{100 * high:.0f}%]"


def test_each_test_has_its_pass_rate_with_a_wilson_interval_and_a_flaky_mark(repeated: Path) -> None:
    figures = run_view(_report(repeated), "repeated.json")["repeats"]
    assert figures["count"] == REPEATS
    assert sorted(figures["tests"]) == ["0", "1", "2"]
    for test, passes in REPEATED_PASSES.items():
        low, high = stats.binomtest(passes, REPEATS).proportion_ci(method="wilson")
        cells = figures["tests"][str(test)]
        assert len(cells) == 2  # one per column: the two prompts
        for cell in cells:
            assert (cell["runs"], cell["passes"], cell["passRate"]) == (REPEATS, passes, passes / REPEATS)
            assert cell["passRateInterval"] == pytest.approx([low, high], abs=1e-9)
            assert cell["flaky"] is (0 < passes < REPEATS)
            assert cell["text"] == _text(passes, REPEATS, low, high)
            assert cell["meanScore"] == pytest.approx(passes / REPEATS)  # contains scores 1 or 0


def test_each_column_has_its_pass_rate_with_tests_as_the_unit(repeated: Path) -> None:
    columns = run_view(_report(repeated), "repeated.json")["repeats"]["columns"]
    rates = [passes / REPEATS for passes in REPEATED_PASSES.values()]
    # as the suite's interval (docs/statistics.md): Wilson over the effective number of tests their spread
    # allows, at the t quantile on m - 1 degrees of freedom (statsmodels' Wilson at the matching alpha)
    m, mean = len(rates), sum(rates) / len(rates)
    effective = min(REPEATS * m, mean * (1 - mean) / (stats.tvar(rates) / m))
    alpha = 2 * stats.norm.sf(stats.t.ppf(0.975, m - 1))
    low, high = proportion_confint(mean * effective, effective, alpha=alpha, method="wilson")
    passes, runs = sum(REPEATED_PASSES.values()), REPEATS * m
    for column in columns:
        assert (column["runs"], column["passes"], column["tests"], column["flaky"]) == (runs, passes, 3, 1)
        assert column["passRateInterval"] == pytest.approx([low, high], abs=1e-9)
        assert column["text"] == _text(passes, runs, low, high)


def test_a_run_without_repeats_has_no_figures_and_its_html_report_is_as_before(
    runs: tuple[Path, Path],
) -> None:
    report = _report(runs[1])
    assert "repeats" not in run_view(report, "current.json")
    page = _Page()
    page.feed(runs[1].with_suffix(".html").read_text(encoding="utf-8"))
    assert page.scripts[1][1] == script_bundle(repeats=False)
    assert REPEAT_SCRIPT not in page.scripts[1][1] and "repeat-figures" not in page.styles[0]


def test_the_html_report_of_a_run_with_repeats_inlines_what_draws_them(repeated: Path) -> None:
    page = _Page()
    page.feed(repeated.with_suffix(".html").read_text(encoding="utf-8"))
    script, style = page.scripts[1][1], page.styles[0]
    assert script == script_bundle(repeats=True) and asset(REPEAT_SCRIPT) in script
    assert style == stylesheet(repeats=True) and asset(REPEAT_STYLESHEET) in style
    (policy,) = [a["content"] for t, a in page.elements if t == "meta" and a.get("http-equiv")]
    assert f"script-src '{_sha256(script)}'" in str(policy) and f"style-src '{_sha256(style)}'" in str(policy)
    data = json.loads(page.scripts[0][1])["view"]
    assert data["repeats"] == json.loads(
        json.dumps(run_view(_report(repeated), data["run"]["ref"])["repeats"])
    )


def test_a_stored_run_has_the_same_figures_read_a_page_at_a_time(repeated: Path) -> None:
    report = _report(repeated)
    with open_store() as store:
        run_id = store.import_report(report, source=str(repeated)).id
        whole = run_view(store.load_run(run_id), run_id)
    first = StoredRuns().page(run_id, 0, 1)
    assert len(first["lines"]) == 1 and first["total"] == 3 * REPEATS
    assert first["repeats"] == whole["repeats"]
    assert not any(math.isnan(c["passRate"]) for cells in first["repeats"]["tests"].values() for c in cells)
