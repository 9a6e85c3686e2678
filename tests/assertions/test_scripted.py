"""The python assertion: inline code and files, every return shape, errors without tracebacks."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from evalh.assertions.registry import all_assertions
from evalh.assertions.scripted import interpret_result, split_file_target
from evalh.config.checks import value_problem
from evalh.model import AssertionResult
from evalh.runner.scoring import decide
from evalh.runtimes.python_worker import compile_inline
from tests.assertions.helpers import definition_of, grade, make_context


def verdict(returned: Any, threshold: float | None) -> AssertionResult:
    """What the runner makes of a returned value: interpret_result, then scoring.py's decision."""
    interpreted = interpret_result(returned)
    return (
        interpreted if isinstance(interpreted, AssertionResult) else decide(interpreted, threshold, "higher")
    )


def run(code: str, output: Any = "hello world", **kwargs: Any) -> AssertionResult:
    return grade(make_context("python", value=code, output=output, **kwargs))


def check(value: Any) -> str | None:
    """What validate says of a python value: its declared shape, then the type's check."""
    problem = value_problem(definition_of("python"), value, {})
    return problem.removeprefix("value: ") if problem else None


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_python_is_registered() -> None:
    definition = all_assertions()["python"]
    assert definition.family == "scripted"
    assert definition.requires_value
    assert definition.default_threshold is None


# -------------------------------------------------------------------------------------- inline


@pytest.mark.parametrize(
    ("code", "output", "passed", "score"),
    [
        ("output == 'hello world'", "hello world", True, 1.0),
        ("output.startswith('bye')", "hello world", False, 0.0),
        ("len(output) / 100", "x" * 30, True, 0.3),
        ("0", "x", False, 0.0),  # a number passes if > 0 without a threshold
        ("-2", "x", False, -2.0),
        ("'Paris' in output and len(output.split()) < 10", "It is Paris.", True, 1.0),
        ("output['city'] == 'Paris'", {"city": "Paris"}, True, 1.0),  # raw output, not its JSON
        ("output is None", None, True, 1.0),
        ("'ü' in output", "Grüße", True, 1.0),
    ],
)
def test_inline_expressions(code: str, output: Any, passed: bool, score: float) -> None:
    result = run(code, output)
    assert result.passed is passed
    assert result.score == pytest.approx(score)
    assert not result.error


def test_inline_multi_line_body_needs_a_return() -> None:
    body = """
    words = output.split()
    if len(words) > 1:
        return {"pass": True, "score": 0.8, "reason": f"{len(words)} words"}
    return False
    """
    result = run(body, "two words")
    assert (result.passed, result.score, result.reason) == (True, 0.8, "2 words")
    assert not run(body, "one").passed

    forgot = run("x = len(output)\nx > 3", "abcdef")
    assert forgot.error
    assert "did the code forget to return?" in forgot.reason


def test_inline_code_has_json_re_and_math_at_hand() -> None:
    code = "json.loads(output)['n'] == 2 and bool(re.search(r'\\d', output)) and math.isclose(1, 1)"
    assert run(code, '{"n": 2}').passed
    assert not run(code, '{"n": 3}').passed


def test_single_line_statement_is_a_body() -> None:
    assert run("return output.upper() == 'HI'", "hi").passed


def test_context_holds_prompt_vars_test_and_config() -> None:
    code = (
        "context['vars']['city'] in output and context['prompt'] == 'Where?' "
        "and context['config']['strict'] is True and context['test']['vars'] == context['vars'] "
        "and context['test']['assert'][0]['type'] == 'python'"
    )
    ctx = make_context(
        "python",
        value=code,
        output="Paris!",
        vars={"city": "Paris"},
        config={"strict": True},
        prompt="Where?",
    )
    assert grade(ctx).passed


@pytest.mark.parametrize(
    ("returned", "threshold", "passed", "score"),
    [
        (True, None, True, 1.0),
        (False, None, False, 0.0),
        (True, 0.9, True, 1.0),  # a bool ignores the threshold
        (0.5, None, True, 0.5),
        (0.5, 0.5, True, 0.5),
        (0.49, 0.5, False, 0.49),
        (0, 0, True, 0.0),  # threshold 0 honoured: 0 >= 0
        (3, None, True, 3.0),
        ({"pass": True, "score": 0.2, "reason": "ok"}, None, True, 0.2),
        ({"pass": True, "score": 0.2}, 0.5, False, 0.2),  # score must reach the threshold
        ({"pass": False, "score": 0.9}, 0.5, False, 0.9),
        ({"pass_": True}, None, True, 1.0),  # snake_case accepted
        ({"pass": False}, None, False, 0.0),
        ({"score": 0.7}, 0.6, True, 0.7),
        ({"score": 0.0}, None, False, 0.0),
        ("true", None, True, 1.0),
        (" FALSE ", None, False, 0.0),
        ("0.75", 0.5, True, 0.75),
    ],
)
def test_return_values(returned: Any, threshold: float | None, passed: bool, score: float) -> None:
    result = verdict(returned, threshold)
    assert not result.error
    assert result.passed is passed
    assert result.score == pytest.approx(score)


def test_return_value_reasons() -> None:
    assert verdict(True, None).reason == "Python assertion returned True"
    assert verdict(0.4, 0.5).reason == ("Python assertion returned 0.4, which is less than threshold 0.5")
    assert verdict(2, None).reason == "Python assertion returned 2, which is greater than 0"
    assert verdict({"pass": True, "reason": "fine"}, None).reason == "fine"
    assert verdict({"pass": True, "score": 0.1}, 0.5).reason == (
        "Python assertion returned pass=True with score 0.1, which is less than threshold 0.5"
    )


@pytest.mark.parametrize(
    ("returned", "fragment"),
    [
        (None, "got NoneType (did the code forget to return?)"),
        ("maybe", "got str"),
        ([True], "got list"),
        ({"reason": "no verdict"}, "without 'pass' or 'score'"),
        ({"pass": "yes"}, "non-boolean pass"),
        ({"pass": True, "score": "high"}, "non-numeric score"),
        (float("nan"), "got float"),
    ],
)
def test_unusable_return_values_are_errors(returned: Any, fragment: str) -> None:
    result = verdict(returned, None)
    assert result.error and not result.passed
    assert fragment in result.reason


def test_numpy_scalars_are_understood() -> None:
    np = pytest.importorskip("numpy")
    assert verdict(np.bool_(True), None).passed
    assert verdict(np.float32(0.25), 0.2).score == pytest.approx(0.25)
    assert not verdict({"pass": np.bool_(False)}, None).passed


def test_exceptions_become_errors_naming_the_line() -> None:
    body = "x = 1\nraise ValueError('bad output')\n"
    result = run(body)
    assert result.error and not result.passed
    assert result.reason == "python assertion raised ValueError: bad output (at line 2 of the code)"

    expression = run("output['missing']", {"present": 1})
    assert expression.reason == "python assertion raised KeyError: 'missing' (at line 1 of the code)"

    exit_call = run("__import__('sys').exit(3)")
    assert exit_call.error
    assert exit_call.reason.startswith("python assertion raised SystemExit: 3")


@pytest.mark.parametrize("code", ["output ==", "return (", "def f(:\n  pass", "x = [1,\n", "await f()"])
def test_syntax_errors_fail_validation(code: str) -> None:
    problem = check(code)
    assert problem is not None and problem.startswith("python assertion has a syntax error: ")


def test_check_accepts_code_and_file_targets() -> None:
    assert check("output == 'x'") is None
    assert check("if output:\n    return True\nreturn False") is None
    assert check("file://checks/grade.py") is None
    assert check("file://checks/grade.py:my_check") is None
    assert check("file://checks/grade.js") == "python assertion files must end in .py (got checks/grade.js)"
    assert check("") is not None
    assert check(None) is not None
    assert check({"code": "x"}) is not None


def test_validation_compiles_but_never_runs_user_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\nreturn True"
    assert check(code) is None
    assert not marker.exists()
    assert run(code).passed
    assert marker.exists()


def test_inline_code_is_compiled_once_at_validate_and_never_again_by_the_handler() -> None:
    compile_inline.cache_clear()
    assert check("len(output) == 1") is None
    for output in ("a", "b", "c"):
        assert run("len(output) == 1", output).passed
    info = compile_inline.cache_info()
    assert (info.misses, info.hits) == (1, 0)  # the handler relies on validate (the worker compiles its own)


# --------------------------------------------------------------------------------------- files


def test_split_file_target() -> None:
    assert split_file_target("file://a/b.py") == ("a/b.py", "get_assert")
    assert split_file_target("file://a/b.py:score_it") == ("a/b.py", "score_it")
    assert split_file_target("file://C:/x/b.py") == ("C:/x/b.py", "get_assert")
    assert split_file_target("file://C:/x/b.py:fn") == ("C:/x/b.py", "fn")


def test_file_default_function_resolved_from_the_config_dir(tmp_path: Path) -> None:
    write(
        tmp_path,
        "checks/grade.py",
        """
        def get_assert(output, context):
            city = context["vars"]["city"]
            return {"pass": city in output, "score": 0.9, "reason": "looked for " + city}
        """,
    )
    ctx = make_context(
        "python", value="file://checks/grade.py", output="Paris", vars={"city": "Paris"}, config_dir=tmp_path
    )
    result = grade(ctx)
    assert (result.passed, result.score, result.reason) == (True, 0.9, "looked for Paris")


def test_file_named_function_and_sibling_import(tmp_path: Path) -> None:
    write(tmp_path, "helper_words_x1.py", "def count(text):\n    return len(text.split())\n")
    write(
        tmp_path,
        "check.py",
        """
        from helper_words_x1 import count

        def short_enough(output, context):
            return count(output) <= context["config"]["max_words"]
        """,
    )
    value = "file://check.py:short_enough"
    assert grade(
        make_context("python", value=value, output="a b", config={"max_words": 3}, config_dir=tmp_path)
    ).passed
    assert not grade(
        make_context("python", value=value, output="a b c d", config={"max_words": 3}, config_dir=tmp_path)
    ).passed


def test_file_async_function_is_awaited(tmp_path: Path) -> None:
    write(tmp_path, "slow.py", "async def get_assert(output, context):\n    return len(output) / 10\n")
    result = grade(make_context("python", value="file://slow.py", output="abcde", config_dir=tmp_path))
    assert result.passed and result.score == pytest.approx(0.5)


def test_file_exception_names_the_file_and_line(tmp_path: Path) -> None:
    write(
        tmp_path,
        "boom.py",
        """
        def helper(output):
            raise ValueError("cannot grade " + output)

        def get_assert(output, context):
            return helper(output)
        """,
    )
    result = grade(make_context("python", value="file://boom.py", output="x", config_dir=tmp_path))
    assert result.error
    assert result.reason == "python assertion raised ValueError: cannot grade x (at boom.py:3)"
    assert "Traceback" not in result.reason


def test_file_problems_are_errors(tmp_path: Path) -> None:
    def reason(value: str) -> str:
        result = grade(make_context("python", value=value, output="x", config_dir=tmp_path))
        assert result.error and not result.passed
        return result.reason

    assert reason("file://absent.py").startswith("python assertion file absent.py cannot be read")
    write(tmp_path, "syntax.py", "def get_assert(output, context)\n    return True\n")
    assert reason("file://syntax.py") == (
        "python assertion file syntax.py has a syntax error: expected ':' (at syntax.py:1)"
    )
    write(tmp_path, "nofn.py", "def other(output, context):\n    return True\n")
    assert reason("file://nofn.py") == "python assertion file nofn.py has no function get_assert()"
    write(tmp_path, "imports.py", "import not_a_module_anywhere_zz\n")
    assert reason("file://imports.py").startswith(
        "importing imports.py raised ModuleNotFoundError: No module named 'not_a_module_anywhere_zz'"
    )


def test_file_is_reloaded_when_it_changes(tmp_path: Path) -> None:
    path = write(tmp_path, "flip.py", "def get_assert(output, context):\n    return True\n")
    ctx = make_context("python", value="file://flip.py", output="x", config_dir=tmp_path)
    assert grade(ctx).passed
    path.write_text("def get_assert(output, context):\n    return False\n", encoding="utf-8")
    later = time.time() + 5
    os.utime(path, (later, later))
    assert not grade(ctx).passed


def test_file_module_state_is_loaded_once(tmp_path: Path) -> None:
    write(
        tmp_path,
        "counter.py",
        """
        LOADS = []
        LOADS.append(1)

        def get_assert(output, context):
            return len(LOADS)
        """,
    )
    ctx = make_context("python", value="file://counter.py", output="x", config_dir=tmp_path)
    scores = [grade(ctx).score for _ in range(3)]
    assert scores == [1.0, 1.0, 1.0]


def test_absolute_file_path(tmp_path: Path) -> None:
    path = write(tmp_path, "abs_check.py", "def get_assert(output, context):\n    return output == 'ok'\n")
    assert grade(make_context("python", value=f"file://{path}", output="ok")).passed


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "python": {"value": "output == 'Paris'", "output": "Paris"},
}
