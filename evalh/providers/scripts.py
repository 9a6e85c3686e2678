"""Providers that need no network: ``echo``, ``exec:<command>`` and ``python:<file.py>[:function]``.

``exec`` runs the command without a shell, with promptfoo's three extra arguments (prompt, options JSON,
context JSON), in a process group of its own; its trimmed stdout is the output, and a non-zero exit or a
timeout is an error row. When it exits, or times out, whatever it left running is killed.
``python`` calls ``call_api(prompt, options, context)`` (or the named function) in a Python worker
process (``evalh/runtimes/python.py``), which loads the file once; it may return a string or
``{output, error, tokenUsage, cost}``. As an embedding provider it calls ``call_embedding_api(text)``
(or the named function) once per text, which returns a list of floats or ``{embedding, tokenUsage}``.
Both have a timeout per call (a batch of texts is one call): ``config.timeout`` (seconds) or
``config.timeoutMs``, else ``evaluateOptions.timeoutMs``, else 300 s (``evalh/common/deadlines.py``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.common.deadlines import PROVIDER_SCRIPT_TIMEOUT_S, call_timeout_s
from evalh.common.environment import overlaid
from evalh.common.limits import MAX_REPLY_ENV, max_reply_bytes, reply_size
from evalh.errors import ConfigError, ProviderError
from evalh.model import ProviderResponse, ProviderSpec, Usage
from evalh.providers.base import CallContext, Embeddings
from evalh.runtimes.callables import CallFailed, call_function

if TYPE_CHECKING:
    from evalh.runtimes.python import FileFunction
# The runtimes (a subprocess, a Python worker) are imported by the call that needs one: a run of other
# providers (echo) never loads them.

__all__ = [
    "CallableProvider",
    "EchoProvider",
    "ExecProvider",
    "PythonProvider",
    "context_json",
    "embeddings_from",
    "make_callable",
    "make_echo",
    "make_exec",
    "make_python",
    "prompt_text",
    "script_reply",
]


def prompt_text(prompt: str | Sequence[Mapping[str, Any]]) -> str:
    """A chat prompt as promptfoo hands it to every provider: JSON indented by two spaces."""
    return prompt if isinstance(prompt, str) else json.dumps(list(prompt), ensure_ascii=False, indent=2)


def context_json(context: CallContext) -> dict[str, Any]:
    """The context user code gets; with the run tracing, promptfoo's ``traceparent`` and ``traceId``
    (start child spans from it and export them to ``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
    made: dict[str, Any] = {"vars": dict(context.vars), "prompt_label": context.prompt_label}
    if context.trace is not None:
        made["traceparent"] = context.trace.traceparent
        made["traceId"] = context.trace.trace_id
    return made


class EchoProvider:
    """The output is the rendered prompt: handy to test templates and assertions."""

    cacheable = False
    answers_at_once = True  # no I/O: see AnswersAtOnce

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        return ProviderResponse(output=prompt_text(prompt), cost=0.0)


class ExecProvider:
    """``exec:<command line>``: a local program is the model under test."""

    cacheable = False

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id
        self.argv = shlex.split(spec.id.removeprefix("exec:"))
        if not self.argv:
            raise ConfigError("exec: needs a command, e.g. exec:python3 app.py", where=spec.path or None)
        self.cwd = spec.base_dir or None
        self.config = dict(spec.config)
        call_timeout_s(
            self.config, None, PROVIDER_SCRIPT_TIMEOUT_S, where=spec.path or spec.id
        )  # checked early
        self.max_output_bytes = max_reply_bytes()

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        options = json.dumps({"config": self.config})
        argv = [*self.argv, prompt_text(prompt), options, json.dumps(context_json(context), default=str)]
        timeout = call_timeout_s(self.config, context.timeout_s, PROVIDER_SCRIPT_TIMEOUT_S)
        started = time.perf_counter()
        # the W3C variable for a process's parent context; this task's overlay only, not the run's
        traceparent = {"TRACEPARENT": context.trace.traceparent} if context.trace is not None else {}
        from evalh.runtimes.processes import OutputTooLarge, TimedOut, run_program

        try:
            with overlaid(traceparent):
                finished = await run_program(
                    argv, cwd=self.cwd, timeout_s=timeout, max_output_bytes=self.max_output_bytes
                )
        except OutputTooLarge as error:
            return ProviderResponse(error=_too_large(f"exec: {self.argv[0]}", "wrote", error.limit))
        except OSError as error:
            return ProviderResponse(error=f"exec: cannot start {self.argv[0]!r}: {error.strerror or error}")
        except TimedOut as error:
            return ProviderResponse(error=f"exec: {self.argv[0]} {error} and was stopped")
        latency = (time.perf_counter() - started) * 1000
        out = finished.stdout.decode("utf-8", "replace").strip()
        err = finished.stderr.decode("utf-8", "replace").strip()
        if finished.returncode != 0:
            detail = f": {err[-500:]}" if err else ""
            return ProviderResponse(
                error=f"exec: {self.argv[0]} exited with code {finished.returncode}{detail}"
            )
        if not out and err:
            return ProviderResponse(error=f"exec: {self.argv[0]} wrote only to stderr: {err[-500:]}")
        return ProviderResponse(output=out, latency_ms=latency)


def _split_python_target(target: str) -> tuple[str, str | None]:
    """``file.py:fn`` -> ("file.py", "fn"); Windows drive letters are not split."""
    path, sep, function = target.rpartition(":")
    if sep and path and not function.endswith(".py") and "/" not in function and "\\" not in function:
        return path, function or None
    return target, None


def _number(value: Any) -> float:
    """A finite number (or text holding one, as before) from a reply's usage or cost; anything else
    (other text, NaN, a list, an object) counts as 0, as promptfoo's ``tokenUsage.total || 0`` adds
    nothing for it, instead of failing the row with a Python error."""
    if isinstance(value, bool):
        return 0.0
    try:
        number = float(value) if isinstance(value, int | float | str) else 0.0
    except ValueError:
        return 0.0
    return number if math.isfinite(number) else 0.0


def _usage_from(payload: Mapping[str, Any]) -> Usage:
    tokens = payload.get("tokenUsage")
    tokens = tokens if isinstance(tokens, Mapping) else {}
    prompt = int(_number(tokens.get("prompt")))
    completion = int(_number(tokens.get("completion")))
    total = int(_number(tokens["total"])) if "total" in tokens else prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total, requests=1)


def _too_large(who: str, verb: str, limit: int) -> str:
    return (
        f"{who} {verb} more than {reply_size(limit)}, the cap on one provider reply: its output was dropped "
        f"(write a shorter output, or raise the cap with the environment variable {MAX_REPLY_ENV}, in MiB)"
    )


def script_reply(result: Any, name: str) -> ProviderResponse:
    """What a Python provider returned: a string (any value) or ``{output, error, tokenUsage, cost,
    finishReason}``; a text output longer than the cap on one reply is an error (it came whole from the
    function, but must not reach the reports)."""
    output = result.get("output") if isinstance(result, Mapping) else result
    limit = max_reply_bytes()
    if (
        isinstance(output, str)
        and len(output) > limit // 4
        and len(output.encode("utf-8", "replace")) > limit
    ):
        return ProviderResponse(error=_too_large(name, "returned", limit))
    from evalh.runtimes.python_worker import Foreign

    if isinstance(result, Foreign):
        return ProviderResponse(
            error=f"{name} returned a {result.type_name}, not a string or {{output, ...}}"
        )
    if isinstance(result, Mapping):
        if result.get("error"):
            return ProviderResponse(error=str(result["error"]), usage=_usage_from(result))
        if isinstance(result.get("output"), Foreign):
            kind = result["output"].type_name
            return ProviderResponse(error=f"{name} returned {{output: a {kind}}}, not a string or JSON data")
        return ProviderResponse(
            output=result.get("output"),
            usage=_usage_from(result),
            cost=_number(result.get("cost")) or None,
            metadata=_reply_metadata(result),
        )
    return ProviderResponse(output=result)


def _reply_metadata(result: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's reply fields the assertions read: ``finishReason`` (finish-reason) and
    ``guardrails`` (the guardrails assertion)."""
    metadata: dict[str, Any] = {}
    reason = result.get("finishReason")
    if isinstance(reason, str) and reason:
        metadata["finishReason"] = reason
    if isinstance(result.get("guardrails"), Mapping):
        metadata["guardrails"] = dict(result["guardrails"])
    return metadata


class CallableProvider:
    """A Python callable passed to ``evalh.evaluate`` as a provider (``evalh/runtimes/callables.py``),
    called in-process as ``fn(prompt, options, context)`` (or with fewer arguments when it takes
    fewer); its id is the callable's name."""

    cacheable = False  # a function's behaviour has no identity to key a cache on

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id
        self.spec = spec
        call_timeout_s(spec.config, None, PROVIDER_SCRIPT_TIMEOUT_S, where=spec.path or spec.id)

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        options = {"id": self.id, "config": dict(self.spec.config)}
        args = (prompt_text(prompt), options, context_json(context))
        timeout = call_timeout_s(self.spec.config, context.timeout_s, PROVIDER_SCRIPT_TIMEOUT_S)
        started = time.perf_counter()
        try:
            result = await call_function(self.id, args, timeout_s=timeout)
        except CallFailed as error:
            return ProviderResponse(error=str(error))
        # the same values as a python: provider's, which cross from its worker (a generator or an
        # object is an error naming it, numpy values become numbers), not an object reports cannot show
        from evalh.runtimes.python_worker import plain

        response = script_reply(plain(result), self.id)
        return dataclasses.replace(response, latency_ms=(time.perf_counter() - started) * 1000)


class PythonProvider:
    """``python:file.py[:function]`` (or ``file://file.py[:function]``): your own Python code."""

    cacheable = False
    batch_size = 64

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id
        self.spec = spec
        target = spec.id.removeprefix("python:").removeprefix("file://")
        file_name, self.function_name = _split_python_target(target)
        self.path = Path(spec.base_dir or ".") / file_name
        where = spec.path or None
        if not self.path.is_file():
            raise ConfigError(
                f"Python file not found: {self.path}",
                where=where,
                hint="Check the path (relative to the config)",
            )
        self.timeout_s = call_timeout_s(
            spec.config, None, PROVIDER_SCRIPT_TIMEOUT_S, where=spec.path or spec.id
        )

    def _target(self, default: str) -> FileFunction:
        from evalh.runtimes.python import FileFunction

        return FileFunction(str(self.path.resolve()), self.function_name or default, str(self.path))

    def cache_identity(self) -> Mapping[str, Any]:
        return {"id": self.id, "file": str(self.path.resolve()), "mtime": self.path.stat().st_mtime}

    async def _call(
        self, default: str, calls: Sequence[tuple[Any, ...]], run_timeout_s: float | None, *, many: bool
    ) -> Any:
        """What the function returned (a list of that with ``many``); ProviderError otherwise."""
        target = self._target(default)
        name = f"{self.path.name}: {target.function}"
        timeout = call_timeout_s(self.spec.config, run_timeout_s, PROVIDER_SCRIPT_TIMEOUT_S)
        from evalh.runtimes.python import LoadProblem, Raised, TimedOut, WorkerLost, call_python, map_python

        try:
            if not many:
                outcome = await call_python(target, calls[0], timeout_s=timeout)
            else:
                outcome = await map_python(target, calls, timeout_s=timeout)
        except TimedOut as error:
            raise ProviderError(
                f"{name} {error} and was stopped (raise config.timeoutMs to allow longer)"
            ) from None
        except WorkerLost:
            raise ProviderError(f"{name}: its process exited during the call (os._exit or a crash)") from None
        if isinstance(outcome, LoadProblem):
            raise ProviderError(outcome.text, where=self.spec.path or None)
        if isinstance(outcome, Raised):
            raise ProviderError(f"{name} raised {outcome.type_name}: {outcome.message}")
        return outcome.value

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        options = {"id": self.id, "config": dict(self.spec.config)}
        try:
            result = await self._call(
                "call_api",
                [(prompt_text(prompt), options, context_json(context))],
                context.timeout_s,
                many=False,
            )
        except ProviderError as error:
            return ProviderResponse(error=error.render())
        return script_reply(result, self.path.name)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        name = f"{self.path.name}: {self.function_name or 'call_embedding_api'}"
        results = await self._call("call_embedding_api", [(text,) for text in texts], None, many=True)
        return embeddings_from(results, name)


def embeddings_from(results: Sequence[Any], name: str) -> Embeddings:
    """The vectors a script's embedding function returned, one result per text: a list of numbers or
    ``{embedding, tokenUsage}`` each (promptfoo's ``callEmbeddingApi`` reply). Raises ProviderError,
    naming ``name``, for anything else."""
    import numpy as np

    rows: list[Sequence[Any]] = []
    usage = Usage()
    for result in results:
        vector = result.get("embedding") if isinstance(result, Mapping) else result
        if isinstance(result, Mapping):
            usage = usage + _usage_from(result)
        if not isinstance(vector, Sequence) or isinstance(vector, str) or not vector:
            raise ProviderError(
                f"{name} must return a list of numbers or {{embedding: [...]}}, got {type(vector).__name__}"
            )
        rows.append(vector)
    if len({len(row) for row in rows}) > 1:
        raise ProviderError(f"{name} returned vectors of different lengths")
    try:
        vectors = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise ProviderError(f"{name} returned a vector that is not a list of numbers") from None
    if vectors.ndim != 2 or not np.isfinite(vectors).all():
        raise ProviderError(f"{name} returned a vector that is not a flat list of finite numbers")
    return Embeddings(vectors=vectors, usage=usage + Usage(texts=len(results)))


def make_echo(spec: ProviderSpec) -> EchoProvider:
    return EchoProvider(spec)


def make_exec(spec: ProviderSpec) -> ExecProvider:
    return ExecProvider(spec)


def make_python(spec: ProviderSpec) -> PythonProvider:
    return PythonProvider(spec)


def make_callable(spec: ProviderSpec) -> CallableProvider:
    return CallableProvider(spec)
