"""write_reports: formats by extension, errors, YAML/HTML content and speed on a large run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalh.errors import ConfigError, EvalhError, ReportError
from evalh.reports.writers import JsonlStream, report_format, supported_extensions, write_reports
from tests.reports.sample import NASTY_OUTPUT, large_run, sample_run


def test_supported_extensions() -> None:
    assert set(supported_extensions()) == {
        ".json",
        ".jsonl",
        ".xml",
        ".junit.xml",
        ".csv",
        ".yaml",
        ".yml",
        ".txt",
        ".html",
        ".md",
    }
    assert report_format("OUT.JUNIT.XML") == "junit"
    assert report_format("a/b.jsonl") == "jsonl"
    assert report_format("x.txt") == "yaml"


def test_every_format_in_one_call(tmp_path: Path) -> None:
    names = ["a.json", "b.jsonl", "c.xml", "d.junit.xml", "e.csv", "f.yaml", "g.yml", "h.txt", "i.html"]
    paths = [tmp_path / "nested" / "dir" / n for n in names]
    written = write_reports(sample_run(), paths)
    assert written == paths
    assert all(p.stat().st_size > 0 for p in paths)
    assert not [p for p in paths[0].parent.iterdir() if p.name.endswith(".tmp")]
    document = json.loads(paths[0].read_bytes())
    for yaml_path in paths[5:8]:
        # One evalId per call, shared by every file of it; YAML holds the same object.
        assert yaml.safe_load(yaml_path.read_text(encoding="utf-8")) == _surrogates_as_text(document)


def _surrogates_as_text(value: object) -> object:
    text = json.dumps(value, ensure_ascii=False).replace("\udcff", "\\\\udcff")
    return json.loads(text)


def test_unknown_extension_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        write_reports(sample_run(), [tmp_path / "ok.json", tmp_path / "report.pdf"])
    assert info.value.exit_code == 2
    message = str(info.value)
    assert "report.pdf" in message and ".junit.xml" in message and ".csv" in message
    assert not (tmp_path / "ok.json").exists()  # nothing written before every path is checked


@pytest.mark.parametrize("name", ["noext", ".json", "report.json.bak"])
def test_names_without_a_known_extension(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError):
        write_reports(sample_run(), [tmp_path / name])


def test_unwritable_path_is_a_report_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    target = blocker / "report.json"
    with pytest.raises(ReportError) as info:
        write_reports(sample_run(), [target])
    assert str(target) in str(info.value)
    assert info.value.exit_code == 1 and isinstance(info.value, EvalhError)


def test_directory_in_the_way_is_a_report_error(tmp_path: Path) -> None:
    target = tmp_path / "taken.csv"
    target.mkdir()
    with pytest.raises(ReportError, match=r"taken\.csv"):
        write_reports(sample_run(), [target])
    assert target.is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["taken.csv"]  # no temporary file left behind


def test_one_unwritable_path_does_not_stop_the_others(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    taken = tmp_path / "taken.json"
    taken.mkdir()
    paths = [blocker / "r.json", tmp_path / "ok.json", taken, tmp_path / "ok.junit.xml"]
    with pytest.raises(ReportError) as info:
        write_reports(sample_run(), paths)
    message = str(info.value)
    assert message.startswith("2 reports could not be written: ")
    assert f"{blocker / 'r.json'}: cannot write the report" in message and f"{blocker}" in message
    assert f"{taken}: cannot write the report" in message
    assert json.loads((tmp_path / "ok.json").read_bytes())["results"]["version"] == 3
    assert (tmp_path / "ok.junit.xml").stat().st_size > 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_jsonl_stream_that_fails_to_write_closes_itself(tmp_path: Path) -> None:
    link = tmp_path / "full.jsonl"
    link.symlink_to("/dev/full")
    stream = JsonlStream(link)
    with pytest.raises(ReportError, match=r"full\.jsonl: cannot write the report"):
        stream.write(sample_run().results[0])
    stream.close()  # nothing left to flush, nothing raised
    with pytest.raises(ReportError, match="closed"):
        stream.write(sample_run().results[0])


def test_jsonl_stream_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        JsonlStream(tmp_path / "rows.json")
    blocker = tmp_path / "f"
    blocker.write_text("x")
    with pytest.raises(ReportError, match=r"rows\.jsonl"):
        JsonlStream(blocker / "rows.jsonl")
    stream = JsonlStream(tmp_path / "rows.jsonl")
    stream.close()
    stream.close()
    with pytest.raises(ReportError, match="closed"):
        stream.write(sample_run().results[0])


def test_yaml_keeps_the_output_readable(tmp_path: Path) -> None:
    (path,) = write_reports(sample_run(), [tmp_path / "r.yaml"])
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    outputs = [r["response"]["output"] for r in loaded["results"]["results"]]
    assert NASTY_OUTPUT.replace("\udcff", "\\udcff") in outputs
    assert loaded["config"]["providers"][1]["config"]["apiKey"] == "[REDACTED]"


def test_ten_thousand_rows_are_written_whole(tmp_path: Path) -> None:
    # the write speed is a benchmark figure (benchmarks/bench_run.py), not a unit-test bound
    run = large_run(10_000, 5)
    write_reports(run, [tmp_path / n for n in ("r.json", "r.jsonl", "r.junit.xml", "r.csv", "r.html")])
    document = json.loads((tmp_path / "r.json").read_bytes())
    assert document["results"]["stats"]["failures"] == len([i for i in range(10_000) if i % 7 == 0])
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 10_000
