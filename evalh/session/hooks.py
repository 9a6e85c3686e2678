"""The extension hooks told of a finished run: afterEach for each row, then afterAll (promptfoo's
``runExtensionHook`` in ``src/evaluator.ts``; see evalh/runtimes/extension_hooks.py).

They run once the run is over, before the reports are written: afterEach with ``{test, result}`` for
each row in report order (promptfoo calls it as each row finishes), then afterAll with ``{prompts,
results, suite, evalId, config}``; each row is promptfoo's JSON row. They are notifications: a hook
that raises or times out is a notice (never an error, even under strict: the results are in) and the
results stand, as a failing afterEach is in promptfoo.
What an afterEach hook returns is not applied (promptfoo merges its ``namedScores`` and ``metadata``
into the row): a hook that changes them gets a warning saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.common.notices import notice
from evalh.errors import ConfigError
from evalh.model import RunRecord
from evalh.reports.codec_read import row_test_case
from evalh.reports.json import to_promptfoo_json
from evalh.runtimes.extension_hooks import HookFailed, call_hook, hooks_for
from evalh.runtimes.transforms import run_blocking

__all__ = ["tell_hooks_of_run"]

_CHANGED_KEYS = ("namedScores", "metadata")


def tell_hooks_of_run(run: RunRecord, eval_id: str, timeout_ms: int) -> None:
    """Call the suite's afterEach hooks for each row, then its afterAll hooks (see the module)."""
    suite = run.suite
    after_each, after_all = hooks_for(suite.extensions, "afterEach"), hooks_for(suite.extensions, "afterAll")
    if not (after_each or after_all):
        return
    config_dir = Path(suite.config_path).parent if suite.config_path else None
    timeout_s = timeout_ms / 1000 if timeout_ms else None
    report = to_promptfoo_json(run, eval_id=eval_id)
    rows: list[dict[str, Any]] = report["results"]["results"]
    for ref in after_each:
        for row in rows:
            context: dict[str, Any] = {"test": row_test_case(row), "result": row}
            returned = _call(ref, "afterEach", context, config_dir, timeout_s)
            _warn_if_changed(ref, row, returned)
    context = {
        "prompts": report["results"].get("prompts", []),
        "results": rows,
        "suite": report.get("config", {}),
        "evalId": eval_id,
        "config": report.get("config", {}),
    }
    for ref in after_all:
        _call(ref, "afterAll", context, config_dir, timeout_s)


def _call(
    ref: str, hook: str, context: Mapping[str, Any], config_dir: Path | None, timeout_s: float | None
) -> Any:
    try:
        return run_blocking(lambda: call_hook(ref, hook, context, config_dir=config_dir, timeout_s=timeout_s))
    except HookFailed as error:
        notice(
            ConfigError(f"extension {ref} ({hook}) {error}; the results stand"),
            where=ref,
            subject=f"{hook} failed",
        )
        return None


def _warn_if_changed(ref: str, row: Mapping[str, Any], returned: Any) -> None:
    result = returned.get("result") if isinstance(returned, Mapping) else None
    if not isinstance(result, Mapping):
        return
    changed = [key for key in _CHANGED_KEYS if key in result and result[key] != row.get(key)]
    if changed:
        notice(
            ConfigError(
                f"extension {ref} (afterEach) changed result.{changed[0]}; evalh does not apply an afterEach "
                "hook's changes (promptfoo merges its namedScores and metadata into the row)",
                hint="Compute the score with an assertion (a javascript or python assertion with a metric)",
            ),
            where=ref,
            subject="afterEach changes",
        )
