"""Files the config names: odd paths and special files are located errors, and data files may only
name files inside the config's directory tree (unless the config opts in)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalh.config import locate
from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError, ConfigFileError
from tests.config.conftest import WriteFiles

HEAD = "prompts: ['{{q}}']\nproviders: [echo]\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # messages show paths relative to here


def _refused(config: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert caught.value.exit_code == EXIT_CONFIG
    return str(caught.value)


def _var_file(project: WriteFiles, ref: str) -> Path:
    return project(HEAD + f"tests:\n  - vars: {{q: {json.dumps(ref)}}}\n")


@pytest.mark.timeout(60)  # reading a FIFO blocked forever
def test_a_fifo_is_refused_without_opening_it(project: WriteFiles) -> None:
    config = _var_file(project, "file://pipe.txt")
    os.mkfifo(config.parent / "pipe.txt")
    assert "evalh.yaml:4:12 tests[0].vars.q: pipe.txt is not a regular file (it is a FIFO)" in _refused(
        config
    )


def test_a_character_device_is_refused(project: WriteFiles) -> None:
    message = _refused(_var_file(project, "file:///dev/zero"))
    assert "/dev/zero is not a regular file (it is a character device)" in message


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("file://a\0b.txt", "cannot use the path 'a\\x00b.txt': the path contains a NUL character"),
        ("file://" + "n" * 300 + ".txt", "file name too long"),
        ("file://~no_such_user_evalh/x.txt", "cannot use the path '~no_such_user_evalh/x.txt'"),
        ("file://loop.txt", "cannot use the path 'loop.txt'"),
        ("file://folder", "folder is a directory, not a file"),
    ],
)
def test_odd_paths_are_located_errors(project: WriteFiles, ref: str, expected: str) -> None:
    config = _var_file(project, ref)
    os.symlink("loop.txt", config.parent / "loop.txt")
    (config.parent / "folder").mkdir()
    message = _refused(config)
    assert message.startswith("evalh.yaml:4:12 tests[0].vars.q: ") or "evalh.yaml:4:12" in message
    assert expected in message


def test_odd_paths_in_every_kind_of_reference_are_located(project: WriteFiles) -> None:
    config = project(
        'prompts: ["file://a\\0b.txt"]\nproviders: ["python:a\\0b.py"]\n'
        "tests: 'file://" + "t" * 300 + ".csv'\n"
    )
    message = _refused(config)
    assert "evalh.yaml:1:11 prompts[0]: cannot use the path" in message
    assert "evalh.yaml:2:13 providers[0]: cannot use the path 'a\\x00b.py'" in message
    assert "evalh.yaml:3:1 tests: " in message and "file name too long" in message


def test_a_config_that_is_a_symlink_loop_is_a_config_file_error(tmp_path: Path) -> None:
    os.symlink("evalh.yaml", tmp_path / "evalh.yaml")
    with pytest.raises(ConfigFileError, match=r"evalh\.yaml"):
        load_suite(tmp_path / "evalh.yaml")


def test_files_over_the_size_bound_are_refused(project: WriteFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locate, "MAX_FILE_BYTES", 1024 * 1024)
    config = _var_file(project, "file://big.txt")
    (config.parent / "big.txt").write_bytes(b"x" * (1024 * 1024 + 1))
    assert "evalh.yaml:4:12 tests[0].vars.q: big.txt is larger than 1 MiB" in _refused(config)
    (config.parent / "big.txt").write_bytes(b"x" * (1024 * 1024))
    assert load_suite(config).tests[0].vars["q"] == "x" * (1024 * 1024)


# --- file:// in data files ---------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret next to (not inside) the project directory."""
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    return secret


@pytest.fixture
def inside_project(tmp_path: Path) -> WriteFiles:
    """Like ``project``, in tmp_path/project, so that tmp_path/secret.txt lies outside it."""

    def write(config: str, files: dict[str, str] | None = None) -> Path:
        root = tmp_path / "project"
        for relative, text in (files or {}).items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        (root / "evalh.yaml").write_text(config, encoding="utf-8")
        return root / "evalh.yaml"

    return write


@pytest.mark.parametrize("ref", ["file://../secret.txt", "file://data/../../secret.txt", "ABSOLUTE"])
def test_a_csv_cell_cannot_read_a_file_outside_the_config_directory(
    inside_project: WriteFiles, outside: Path, ref: str
) -> None:
    ref = f"file://{outside}" if ref == "ABSOLUTE" else ref
    config = inside_project(HEAD + "tests: file://data/t.csv\n", {"data/t.csv": f"q,other\n{ref},x\n"})
    message = _refused(config)
    assert f"t.csv:2:1 tests[0].vars.q: {ref!r} names a file outside the config's directory" in message
    assert "evaluateOptions.allowFileOutsideConfigDir: true" in message
    assert "top secret" not in message


def test_a_symlink_inside_the_tree_that_points_out_is_refused(
    inside_project: WriteFiles, outside: Path
) -> None:
    config = inside_project(HEAD + "tests: file://t.csv\n", {"t.csv": "q\nfile://link.txt\n"})
    os.symlink(outside, config.parent / "link.txt")
    assert "'file://link.txt' names a file outside the config's directory" in _refused(config)


def test_files_inside_the_tree_and_the_configs_own_references_are_read(
    inside_project: WriteFiles, outside: Path
) -> None:
    config = inside_project(
        HEAD + f"defaultTest: {{vars: {{own: 'file://{outside}'}}}}\ntests: file://t.csv\n",
        {"t.csv": "q\nfile://data/doc.txt\n", "data/doc.txt": "inside"},
    )
    test = load_suite(config).tests[0]
    assert test.vars == {"own": "top secret", "q": "inside"}  # the author's reference may go anywhere


def test_the_config_can_opt_in(inside_project: WriteFiles, outside: Path) -> None:
    config = inside_project(
        HEAD + "evaluateOptions: {allowFileOutsideConfigDir: true}\ntests: file://t.csv\n",
        {"t.csv": "q\nfile://../secret.txt\n"},
    )
    assert load_suite(config).tests[0].vars["q"] == "top secret"


def test_every_place_a_data_file_names_a_file_is_confined(inside_project: WriteFiles, outside: Path) -> None:
    jsonl = (
        '{"vars": {"q": "a"}, "assert": [{"type": "equals", "value": "file://../secret.txt"}]}\n'
        '{"vars": "file://../vars.yaml"}\n'
        '{"vars": {"q": "a"}, "assert": [{"type": "assert-set", "assert": '
        '[{"type": "llm-rubric", "value": "x", "rubricPrompt": "file://../secret.txt", '
        '"provider": "python:../grader.py"}]}]}\n'
    )
    yaml_tests = "- vars: {q: a}\n  options: {provider: 'file://../grader.py'}\n"
    config = inside_project(
        HEAD + "tests: [file://t.jsonl, file://t.yaml, {vars: 'file://v.yaml'}]\n",
        {"t.jsonl": jsonl, "t.yaml": yaml_tests, "v.yaml": "q: file://../secret.txt\n"},
    )
    message = _refused(config)
    for expected in [
        "t.jsonl:1 tests[0].assert[0].value: 'file://../secret.txt' names a file outside",
        "t.jsonl:2 tests[1].vars: 'file://../vars.yaml' names a file outside",
        "t.jsonl:3 tests[2].assert[0].assert[0].rubricPrompt: 'file://../secret.txt'",
        "t.jsonl:3 tests[2].assert[0].assert[0].provider: 'python:../grader.py'",
        "t.yaml:2:13 tests[3].options.provider: 'file://../grader.py'",
        "v.yaml:1:1 q: 'file://../secret.txt' names a file outside",  # a vars file is data too
    ]:
        assert expected in message, f"{expected!r} not in\n{message}"
    assert "top secret" not in message


def test_a_python_assertion_from_a_csv_cell_is_confined(inside_project: WriteFiles, tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text("def get_assert(output, context):\n    return True\n", encoding="utf-8")
    config = inside_project(
        HEAD + "tests: file://t.csv\n", {"t.csv": f"q,__expected\na,file://{tmp_path / 'evil.py'}\n"}
    )
    assert "t.csv:2:2 tests[0].assert[0].value" in _refused(config)


def test_a_tests_files_plain_vars_path_cannot_read_outside_the_config_directory(
    inside_project: WriteFiles, tmp_path: Path
) -> None:
    # promptfoo's plain-path form (vars: vars.yaml, no file://) is confined like file:// refs; it is
    # relative to the tests file (data/), so ../../ leaves the project
    (tmp_path / "secret.yaml").write_text("token: top secret\n", encoding="utf-8")
    config = inside_project(
        HEAD + "tests: file://data/t.yaml\n",
        {"data/t.yaml": "- vars: ../../secret.yaml\n- vars: [../../secret.yaml]\n"},
    )
    message = _refused(config)
    assert "tests[0].vars: '../../secret.yaml' names a file outside the config's directory" in message
    assert "tests[1].vars[0]: '../../secret.yaml' names a file outside the config's directory" in message
    assert "allowFileOutsideConfigDir: true" in message
    assert "top secret" not in message


# --- globs in data files: each match is confined like a plain path ----------------------------------


@pytest.mark.parametrize(
    ("files", "where"),
    [
        ({"t.csv": "q\nfile://data/*.txt\n"}, "t.csv:2:1 tests[0].vars.q: 'file://data/*.txt'"),
        ({"t.csv": "q\nfile://data/?ink.txt\n"}, "t.csv:2:1 tests[0].vars.q: 'file://data/?ink.txt'"),
        ({"t.csv": "q\nfile://**/link.txt\n"}, "t.csv:2:1 tests[0].vars.q: 'file://**/link.txt'"),
        ({"t.jsonl": '{"vars": {"q": "file://data/*"}}\n'}, "t.jsonl:1 tests[0].vars.q: 'file://data/*'"),
        ({"t.yaml": "- vars: file://data/*.yaml\n"}, "t.yaml:1:3 tests[0].vars: 'file://data/*.yaml'"),
        (
            {"t.yaml": "- vars: file://v.yaml\n", "v.yaml": "q: file://data/*\n"},
            "v.yaml:1:1 q: 'file://data/*'",
        ),
    ],
)
def test_a_glob_in_a_data_file_cannot_follow_a_link_out_of_the_config_directory(
    inside_project: WriteFiles, outside: Path, files: dict[str, str], where: str
) -> None:
    tests = next(name for name in files if name.startswith("t."))
    config = inside_project(HEAD + f"tests: file://{tests}\n", {**files, "data/plain.txt": "inside"})
    os.symlink(outside, config.parent / "data" / "link.txt")
    os.symlink(outside, config.parent / "data" / "link.yaml")
    message = _refused(config)
    assert f"{where} names a file outside the config's directory" in message
    assert "top secret" not in message


def test_a_glob_in_a_data_file_reads_the_files_inside_the_tree(inside_project: WriteFiles) -> None:
    config = inside_project(
        HEAD + "tests: file://t.csv\n",
        {"t.csv": "q\nfile://data/*.txt\n", "data/a.txt": "A", "data/b.txt": "B"},
    )
    assert [test.vars["q"] for test in load_suite(config).tests] == ["A", "B"]


def test_the_configs_own_glob_may_follow_a_link_out(inside_project: WriteFiles, outside: Path) -> None:
    config = inside_project(
        HEAD + "tests: [{vars: {q: 'file://data/*.txt'}}]\n", {"data/plain.txt": "inside"}
    )
    os.symlink(outside, config.parent / "data" / "link.txt")
    assert sorted(test.vars["q"] for test in load_suite(config).tests) == ["inside", "top secret"]


def test_a_data_files_tools_and_simulated_user_are_confined(
    inside_project: WriteFiles, tmp_path: Path
) -> None:
    """Issue 26's file references inside a test: a provider's ``tools: file://`` (read into the config and
    the report) and the simulated user's ``userProvider`` (a script evalh runs) were not checked."""
    (tmp_path / "tools.yaml").write_text("- {type: function, function: {name: f}}\n", encoding="utf-8")
    (tmp_path / "user.py").write_text(
        "def call_api(prompt, options, context):\n    return {}\n", encoding="utf-8"
    )
    yaml_tests = (
        "- vars: {q: a, instructions: hi}\n"
        "  provider: {id: 'promptfoo:simulated-user', config: {userProvider: 'file://../user.py'}}\n"
        "  options: {provider: {id: echo, config: {tools: 'file://../tools.yaml'}}}\n"
        "  assert:\n"
        "    - {type: is-valid-openai-tools-call, provider: {id: echo, config: {functions: ['file://../tools.yaml']}}}\n"
    )
    message = _refused(inside_project(HEAD + "tests: file://t.yaml\n", {"t.yaml": yaml_tests}))
    for expected in [
        "tests[0].provider.config.userProvider: 'file://../user.py' names a file outside",
        "tests[0].options.provider.config.tools: 'file://../tools.yaml' names a file outside",
        "tests[0].assert[0].provider.config.functions[0]: 'file://../tools.yaml' names a file outside",
    ]:
        assert expected in message, f"{expected!r} not in\n{message}"
