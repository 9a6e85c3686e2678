"""promptfoo's vars forms (issue 10): ``vars:`` as a file, a glob or a list of them; a var whose value is
a ``file://`` glob (one test per file); image and audio var files as base64. Through the CLI in process,
on the project in tests/fixtures/promptfoo_vars (copied, so reports land in a temporary directory)."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from tests.config.test_promptfoo_semantics import evalh, run_rows, write

FIXTURE = Path(__file__).parents[1] / "fixtures" / "promptfoo_vars"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "p")
    return tmp_path / "p"


def test_vars_files_globs_and_lists_merge_in_order(project: Path) -> None:
    result, rows = run_rows(project / "evalh.yaml")
    outputs = {row["description"]: row["response"]["output"] for row in rows if "page" not in row["vars"]}
    # a.yaml then b.yaml (sorted glob): b's country wins; the list names b first, so a's wins
    assert outputs["glob of vars files"].startswith("Paris|FR|")
    assert outputs["list of vars files"].startswith("Paris|France|")
    assert result.exit_code == 0, result.stderr


def test_a_var_glob_makes_one_test_per_file(project: Path) -> None:
    _, rows = run_rows(project / "evalh.yaml")
    pages = [row["vars"]["page"] for row in rows if row["description"] == "var glob"]
    assert pages == ["first page", "second page"]
    assert [row["testIdx"] for row in rows] == list(range(len(rows)))


def test_image_vars_are_data_urls_and_audio_raw_base64(project: Path) -> None:
    _, rows = run_rows(project / "evalh.yaml")
    images = {row["description"]: row["vars"]["image"] for row in rows if "image" in row["vars"]}
    png = (project / "images" / "dot.png").read_bytes()
    assert images["image"] == "data:image/png;base64," + base64.b64encode(png).decode()
    # a PNG saved as .jpg is sent as what its bytes are
    assert images["misnamed image"].startswith("data:image/png;base64,")
    audio = (project / "images" / "clip.mp3").read_bytes()
    assert images["audio"] == base64.b64encode(audio).decode()


def test_bad_var_files_are_located_errors(tmp_path: Path) -> None:
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4 binary")
    (tmp_path / "notes.txt").write_text("x: 1\n", encoding="utf-8")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{a}}"]
        providers: [echo]
        tests:
          - vars: {a: file://missing/*.txt}
          - vars: {a: file://doc.pdf}
          - vars: [file://notes.txt]
          - vars: file://nothing/*.yaml
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    err = result.stderr
    assert "c.yaml:5:12 tests[0].vars.a: no file matches 'missing/*.txt'" in err
    assert "c.yaml:6:12 tests[1].vars.a: 'file://doc.pdf' is a PDF" in err
    assert "c.yaml:7:5 tests[2].vars: " in err and "notes.txt cannot hold vars" in err
    assert "c.yaml:8:5 tests[3].vars: no file matches 'nothing/*.yaml'" in err
    assert "Traceback" not in err


def test_a_var_glob_stays_one_value_when_expansion_is_disabled(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "x.txt").write_text("X", encoding="utf-8")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{a}}"]
        providers: [echo]
        tests:
          - vars: {a: file://p/*.txt}
            options: {disableVarExpansion: true}
        """,
    )
    result = evalh("validate", str(config))
    # not expanded, so the pattern is read as one path, which does not exist (promptfoo fails too)
    assert result.exit_code == 2
    assert "tests[0].vars.a: file not found" in result.stderr
