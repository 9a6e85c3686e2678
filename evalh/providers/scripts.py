"""Providers that need no network: ``echo``, ``exec:<command>`` and ``python:<file.py>[:function]``.

``exec`` runs the command without a shell, with promptfoo's three extra arguments (prompt, options JSON,
context JSON); its trimmed stdout is the output, and a non-zero exit or a timeout is an error row.
``python`` loads the file once and calls ``call_api(prompt, options, context)`` (or the named function);
it may return a string or ``{output, error, tokenUsage, cost}``. As an embedding provider it calls
``call_embedding_api(text)`` (or the named function) once per text, which returns a list of floats or
``{embedding, tokenUsage}``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from evalh.errors import ConfigError, ProviderError
from evalh.model import ProviderResponse, ProviderSpec, Usage
from evalh.providers.base import CallContext, Embeddings

__all__ = ["EchoProvider", "ExecProvider", "PythonProvider", "make_echo", "make_exec", "make_python"]

DEFAULT_EXEC_TIMEOUT_S = 300.0


def _prompt_text(prompt: str | Sequence[Mapping[str, Any]]) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(list(prompt), ensure_ascii=False)


def _context_json(context: CallContext) -> dict[str, Any]:
    return {"vars": dict(context.vars), "prompt_label": context.prompt_label}


class EchoProvider:
    """The output is the rendered prompt: handy to test templates and assertions."""

    cacheable = False

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        return ProviderResponse(output=_prompt_text(prompt), cost=0.0)


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
        timeout_ms = self.config.get("timeoutMs")
        self.timeout_s = float(timeout_ms) / 1000 if timeout_ms else None

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        options = json.dumps({"config": self.config})
        argv = [*self.argv, _prompt_text(prompt), options, json.dumps(_context_json(context), default=str)]
        timeout = self.timeout_s or context.timeout_s or DEFAULT_EXEC_TIMEOUT_S
        started = time.perf_counter()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as error:
            return ProviderResponse(error=f"exec: cannot start {self.argv[0]!r}: {error.strerror or error}")
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            return ProviderResponse(error=f"exec: {self.argv[0]} timed out after {timeout:g} s")
        except asyncio.CancelledError:  # the run was stopped: the command must not outlive it
            process.kill()
            await process.wait()
            raise
        latency = (time.perf_counter() - started) * 1000
        out = stdout.decode("utf-8", "replace").strip()
        err = stderr.decode("utf-8", "replace").strip()
        if process.returncode != 0:
            detail = f": {err[-500:]}" if err else ""
            return ProviderResponse(
                error=f"exec: {self.argv[0]} exited with code {process.returncode}{detail}"
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


_MODULES: dict[tuple[str, float], ModuleType] = {}


def load_python_file(path: Path, where: str | None = None) -> ModuleType:
    """Import a user's Python file once per (path, mtime); its folder is importable while it loads."""
    if not path.is_file():
        raise ConfigError(
            f"Python file not found: {path}", where=where, hint="Check the path (relative to the config)"
        )
    key = (str(path.resolve()), path.stat().st_mtime)
    if key in _MODULES:
        return _MODULES[key]
    spec = importlib.util.spec_from_file_location(f"evalh_user_{abs(hash(key))}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}", where=where)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ProviderError(
            f"importing {path} raised {type(error).__name__}: {error}", where=where
        ) from error
    finally:
        sys.path.remove(str(path.parent))
    _MODULES[key] = module
    return module


async def _call_user(function: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(function):
        return await function(*args)
    return await asyncio.to_thread(function, *args)


def _usage_from(payload: Mapping[str, Any]) -> Usage:
    tokens = payload.get("tokenUsage") or {}
    prompt = int(tokens.get("prompt", 0) or 0)
    completion = int(tokens.get("completion", 0) or 0)
    total = int(tokens.get("total", prompt + completion) or 0)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total, requests=1)


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
        self.module = load_python_file(self.path, where=spec.path or None)

    def _function(self, default: str) -> Callable[..., Any]:
        name = self.function_name or default
        function: Callable[..., Any] | None = getattr(self.module, name, None)
        if not callable(function):
            raise ProviderError(f"{self.path} has no function {name}()", where=self.spec.path or None)
        return function

    def cache_identity(self) -> Mapping[str, Any]:
        return {"id": self.id, "file": str(self.path.resolve()), "mtime": self.path.stat().st_mtime}

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        function = self._function("call_api")
        options = {"id": self.id, "config": dict(self.spec.config)}
        context_arg = {"vars": dict(context.vars), "prompt_label": context.prompt_label}
        try:
            result = await _call_user(function, _prompt_text(prompt), options, context_arg)
        except Exception as error:
            return ProviderResponse(
                error=f"{self.path.name}: {function.__name__} raised {type(error).__name__}: {error}"
            )
        if isinstance(result, Mapping):
            if result.get("error"):
                return ProviderResponse(error=str(result["error"]), usage=_usage_from(result))
            cost = result.get("cost")
            return ProviderResponse(
                output=result.get("output"), usage=_usage_from(result), cost=float(cost) if cost else None
            )
        return ProviderResponse(output=result)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        import numpy as np

        function = self._function("call_embedding_api")
        name = f"{self.path.name}: {function.__name__}"
        rows: list[Sequence[Any]] = []
        usage = Usage()
        for text in texts:
            try:
                result = await _call_user(function, text)
            except Exception as error:
                raise ProviderError(f"{name} raised {type(error).__name__}: {error}") from error
            vector = result.get("embedding") if isinstance(result, Mapping) else result
            if isinstance(result, Mapping):
                usage = usage + _usage_from(result)
            if not isinstance(vector, Sequence) or isinstance(vector, str) or not vector:
                raise ProviderError(
                    f"{name} must return a list of numbers or {{embedding: [...]}}, "
                    f"got {type(vector).__name__}"
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
        return Embeddings(vectors=vectors, usage=usage + Usage(texts=len(texts)))


def make_echo(spec: ProviderSpec) -> EchoProvider:
    return EchoProvider(spec)


def make_exec(spec: ProviderSpec) -> ExecProvider:
    return ExecProvider(spec)


def make_python(spec: ProviderSpec) -> PythonProvider:
    return PythonProvider(spec)
