"""Rows that depend on earlier rows: promptfoo's ``storeOutputAs`` and ``_conversation``.

When some test has ``options.storeOutputAs`` or some prompt reads ``_conversation``, promptfoo runs the
whole eval one row at a time, in order (``src/evaluator.ts`` sets the concurrency to 1), and so does
evalh: the rows run in plan order (test, then provider, then prompt), each after the one before it.

Before a row runs (:meth:`RunMemory.prepare`):
- ``_conversation`` is the list of earlier turns of the same provider and prompt (and
  ``metadata.conversationId``, when the test has one): ``{prompt, input, output, metadata}`` each; it
  is left undefined under ``options.disableConversationVar`` or ``PROMPTFOO_DISABLE_CONVERSATION_VAR``
  (a loop over it runs no turn);
- every stored output is set as its var (over the test's own var of that name, as promptfoo does);
- the test's late vars are rendered (those reading a stored name, which the loader found:
  evalh/config/stored_outputs.py);
- the prompt is rendered again with these vars.
Stored outputs are data: inserted by the template engine, never rendered themselves.

After the provider answers (:meth:`RunMemory.record`), the turn joins its conversation, and an output
(after ``options.transform``) that is not empty is stored under the test's ``storeOutputAs`` name. The
row's assertions and its report then see ``_conversation`` with the row's own turn last (but for the
first turn of a conversation, whose list stays empty: :meth:`RunMemory.with_own_turn`), as promptfoo's
live list shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalh.common.environment import getenv
from evalh.errors import TemplateError
from evalh.model import (
    CONVERSATION_VAR,
    STORE_KEY,
    ProviderResponse,
    Suite,
    TestCase,
    stored_names,
    uses_conversation,
)
from evalh.runner.plan import Job, render_job_prompt
from evalh.templating import EnvVars, referenced_names, render_template

__all__ = ["RunMemory", "runs_in_sequence"]

_DISABLE_ENV = "PROMPTFOO_DISABLE_CONVERSATION_VAR"


def runs_in_sequence(suite: Suite) -> bool:
    """Whether the run goes one row at a time: some test stores its output, or a prompt reads
    ``_conversation``."""
    return bool(stored_names(test.options for test in suite.tests)) or any(
        uses_conversation(prompt) for prompt in suite.prompts
    )


def _conversation_disabled(test: TestCase) -> bool:
    flag = getenv(_DISABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return flag or test.options.get("disableConversationVar") is True


def _conversation_key(job: Job) -> str:
    """promptfoo's: provider label or id, prompt, and the test's ``metadata.conversationId``."""
    key = f"{job.provider.label or job.provider.id}:{job.prompt_index}"
    conversation_id = job.test.metadata.get("conversationId")
    return f"{key}:{conversation_id}" if conversation_id else key


def _turn(rendered: str | list[dict[str, Any]], response: ProviderResponse) -> dict[str, Any]:
    """One ``_conversation`` entry: the prompt, its last message's content, the output."""
    prompt: Any = rendered
    if isinstance(rendered, str):
        try:
            prompt = json.loads(rendered)
        except ValueError:
            prompt = rendered
    last = prompt[-1] if isinstance(prompt, list) and prompt else None
    content = last.get("content") if isinstance(last, Mapping) else last
    return {
        "prompt": prompt,
        "input": content or prompt,
        "output": response.output if response.output is not None else "",
        "metadata": dict(response.metadata or {}),
    }


@dataclass
class RunMemory:
    """What earlier rows left for later ones: stored outputs and conversations."""

    env: EnvVars
    registers: dict[str, Any] = field(default_factory=dict)
    conversations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def prepare(self, job: Job) -> Job:
        """``job`` with its vars set from earlier rows and its prompt rendered with them. Raises
        TemplateError when a late var or the prompt cannot render."""
        test = job.test
        variables = dict(test.vars)
        disabled = uses_conversation(job.prompt) and _conversation_disabled(test)
        if uses_conversation(job.prompt) and not disabled:
            variables[CONVERSATION_VAR] = list(self.conversations.get(_conversation_key(job), []))
        variables.update(self.registers)
        late = [name for name in test.late_vars if name not in self.registers]
        variables = _render_late(variables, late, self.env, test.path or "a test")
        test = replace(test, vars=variables)
        # disabled, the var is undefined for the row's assertions and report (as in promptfoo); the prompt
        # renders as with no turn, without an undefined-variable warning for the loop over it
        shown = replace(test, vars={**variables, CONVERSATION_VAR: []}) if disabled else test
        return replace(job, test=test, rendered_prompt=render_job_prompt(job, shown, self.env))

    def with_own_turn(self, job: Job) -> Job:
        """``job`` as its assertions see it: in promptfoo a row's ``_conversation`` is the conversation's
        live list, which the row's own turn joins before it is graded (and saved); the first turn of a
        conversation gets a fresh empty list instead, which stays empty."""
        if not job.test.vars.get(CONVERSATION_VAR) or not uses_conversation(job.prompt):
            return job
        turns = list(self.conversations.get(_conversation_key(job), []))
        return replace(job, test=replace(job.test, vars={**job.test.vars, CONVERSATION_VAR: turns}))

    def record(self, job: Job, provider_response: ProviderResponse, output: ProviderResponse) -> None:
        """Remember the row: its turn of the conversation, and its output when the test stores it."""
        turn = _turn(job.rendered_prompt, provider_response)
        self.conversations.setdefault(_conversation_key(job), []).append(turn)
        name = job.test.options.get(STORE_KEY)
        if isinstance(name, str) and output.error is None and output.output:
            self.registers[name] = output.output


def _render_late(variables: dict[str, Any], late: list[str], env: EnvVars, path: str) -> dict[str, Any]:
    """Render the late vars in dependency order (each once; the values they read are data)."""
    pending = list(late)
    while pending:
        for name in pending:
            where = f"{path}.vars.{name}"
            if not referenced_names(variables[name], where=where) & (set(pending) - {name}):
                variables[name] = render_template(variables[name], variables, where=where, env=env)
                pending.remove(name)
                break
        else:
            raise TemplateError(f"vars reference each other in a cycle: {', '.join(pending)}", where=path)
    return variables
