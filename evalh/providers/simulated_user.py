"""``promptfoo:simulated-user``: a model plays the user against the provider under test, turn by turn.

Written on a test or ``defaultTest`` as ``provider: {id: promptfoo:simulated-user, config: {maxTurns,
instructions, initialMessages, stateful, userProvider}}``; the runner calls it in place of the provider
under test and hands it that provider (``CallContext.original_provider``) and the run's completions
(``CallContext.completions``: cache, gates, timeouts, usage for every call it makes). Each turn the user
model (``config.userProvider``, else the test's grader) writes the user's next message from its
instructions and the conversation so far (roles flipped: to it, the agent is the user); the message goes
to the provider under test with the rendered prompt as the system message, and the answer goes back,
until ``maxTurns`` turns or the user says ``###STOP###`` (checked before the message is sent). The
output is the whole conversation as promptfoo writes it (``User: ...`` / ``Assistant: ...`` joined by
``---`` lines); usage and cost are the sum of the agent's turns. promptfoo asks its hosted service for
the user's messages; evalh is offline, so the user model is one of yours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalh.errors import ConfigError
from evalh.model import NO_USAGE, ProviderChoice, ProviderResponse, ProviderSpec, TestCase, Usage
from evalh.providers.base import CallContext, CompletionProvider, Completions
from evalh.templating import render_template

__all__ = [
    "SIMULATED_USER_ID",
    "STOP_MARKER",
    "SimulatedUser",
    "conversation_text",
    "is_message",
    "make_simulated_user",
    "user_model_of",
    "user_system_prompt",
]

SIMULATED_USER_ID = "promptfoo:simulated-user"
STOP_MARKER = "###STOP###"  # the user model ends the conversation by writing it (promptfoo's marker)
DEFAULT_MAX_TURNS = 10
DEFAULT_INSTRUCTIONS = "{{instructions}}"
ROLES = ("user", "assistant", "system")

Message = dict[str, str]


def user_system_prompt(instructions: str) -> str:
    """What the user model is told: play the user from ``instructions``, one message at a time."""
    return (
        "You play a user talking to an AI agent. Stay in character: write only the user's next "
        "message, one short message per turn.\n\n"
        f"Your instructions:\n{instructions}\n\n"
        "Rules:\n"
        "- Reveal what the instructions say only when the agent needs it for the current step.\n"
        "- Do not invent facts the instructions do not give; say you do not know instead.\n"
        "- Use your own words rather than repeating the instructions.\n"
        f"- When your goal is reached (or cannot be reached), reply with {STOP_MARKER} alone."
    )


def user_model_of(
    stand_in: ProviderSpec, test: TestCase | None, grader: ProviderChoice | None
) -> ProviderSpec | None:
    """The model that plays the user: ``config.userProvider`` (a ProviderSpec: the config loader parses
    and checks it), else the grader: the test's ``options.provider`` (defaultTest's merged in), else the
    suite's (``--grader``). None when there is none."""
    own = stand_in.config.get("userProvider")
    if isinstance(own, ProviderSpec):
        return own
    for choice in (test.provider if test is not None else None, grader):
        picked = choice.for_kind("text") if choice is not None else None
        if picked is not None:
            return picked
    return None


def conversation_text(messages: Sequence[Mapping[str, str]]) -> str:
    """The conversation as promptfoo's output: ``User: ...`` / ``Assistant: ...`` joined by ``---``."""
    return "\n---\n".join(
        f"{'Assistant' if message['role'] == 'assistant' else 'User'}: {message['content']}"
        for message in messages
    )


@dataclass
class _Conversation:
    """One test's conversation as it grows, and what the agent's turns cost."""

    messages: list[Message]
    usage: Usage = NO_USAGE
    cost: float | None = None
    session_id: Any = None

    def answered(self, response: ProviderResponse) -> None:
        self.messages.append({"role": "assistant", "content": _text(response.output)})
        self.usage = self.usage + response.usage
        if response.cost is not None:
            self.cost = (self.cost or 0.0) + response.cost
        self.session_id = response.metadata.get("sessionId", self.session_id)

    def result(self) -> ProviderResponse:
        metadata: dict[str, Any] = {"messages": [dict(message) for message in self.messages]}
        if self.session_id is not None:
            metadata["sessionId"] = self.session_id
        return ProviderResponse(
            output=conversation_text(self.messages), usage=self.usage, cost=self.cost, metadata=metadata
        )

    def failed(self, error: str) -> ProviderResponse:
        return ProviderResponse(error=error, usage=self.usage, cost=self.cost)


def _text(output: Any) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


class SimulatedUser:
    """Plays one conversation per call against ``context.original_provider``."""

    cacheable = False  # the conversation is not one request: each call it makes is cached on its own

    def __init__(self, spec: ProviderSpec) -> None:
        self.id = spec.id
        self.where = spec.path or spec.id
        config = spec.config
        self.max_turns = int(config.get("maxTurns", DEFAULT_MAX_TURNS))
        self.instructions = str(config.get("instructions") or DEFAULT_INSTRUCTIONS)
        self.stateful = bool(config.get("stateful", False))
        self.initial_messages: Any = config.get("initialMessages")
        self.spec = spec

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        target, completions = context.original_provider, context.completions
        if not isinstance(target, CompletionProvider) or not isinstance(completions, Completions):
            raise ConfigError(
                f"{SIMULATED_USER_ID} plays the user against the provider under test, so it runs only "
                "as a test's (or defaultTest's) provider",
                where=self.where,
                hint="Move it from providers: to defaultTest: {provider: {id: promptfoo:simulated-user, "
                "config: {maxTurns: 5}}} and list the agent under test in providers:",
            )
        user = self._user_model(context, completions)
        system = prompt if isinstance(prompt, str) else json.dumps(list(prompt), ensure_ascii=False)
        talk = _Conversation(self._initial_messages(context))
        turns = _Turns(self.stateful, target, context, system)
        if talk.messages and talk.messages[-1]["role"] == "user":  # the agent answers them first
            answer = await turns.agent(talk, "answering the initial messages")
            if answer.error is not None:
                return talk.failed(answer.error)
        instructions = self._instructions(context)
        for turn in range(1, self.max_turns + 1):
            said = await completions.complete(user, _flipped(talk.messages, instructions))
            if said.error is not None:
                return talk.failed(f"the simulated user ({user.display}) failed at turn {turn}: {said.error}")
            message = _text(said.output)
            if STOP_MARKER in message:
                break
            talk.messages.append({"role": "user", "content": message})
            answer = await turns.agent(talk, f"at turn {turn} of the conversation")
            if answer.error is not None:
                return talk.failed(answer.error)
        return talk.result()

    def _user_model(self, context: CallContext, completions: Completions) -> ProviderSpec:
        user = user_model_of(self.spec, context.test, completions.default_choice)
        if user is None:
            raise ConfigError(
                f"{SIMULATED_USER_ID} has no model to play the user",
                where=self.where,
                hint="Set config.userProvider (any completion provider, e.g. openai:chat:gpt-4o-mini), or a "
                "grader: defaultTest.options.provider or --grader",
            )
        return user

    def _instructions(self, context: CallContext) -> str:
        # the template is config; the vars are data, inserted once
        return render_template(self.instructions, context.vars, where=f"{self.where}.config.instructions")

    def _initial_messages(self, context: CallContext) -> list[Message]:
        """``vars.initialMessages`` (data, used as written), else ``config.initialMessages`` (templates
        over the vars); entries that are not ``{role, content}`` are refused at load."""
        given = context.vars.get("initialMessages")
        if given:
            listed = [_message(item) for item in _message_list(given) if is_message(item)]
            return [message for message in listed if message["role"] in ROLES]
        rendered = []
        for index, item in enumerate(_message_list(self.initial_messages)):
            if not is_message(item):
                continue
            where = f"{self.where}.config.initialMessages[{index}]"
            role = render_template(item["role"], context.vars, where=f"{where}.role")
            content = render_template(item["content"], context.vars, where=f"{where}.content")
            if role in ROLES:
                rendered.append({"role": role, "content": content})
        return rendered


@dataclass(frozen=True)
class _Turns:
    """Sends the conversation to the provider under test, as promptfoo does."""

    stateful: bool
    target: CompletionProvider
    context: CallContext
    system: str

    async def agent(self, talk: _Conversation, when: str) -> ProviderResponse:
        """The agent's answer to the conversation so far, added to it; ``when`` names the turn in an error."""
        history: list[Message] = talk.messages
        if self.stateful:  # the agent keeps the history: only the newest message, once it has a session
            history = [talk.messages[-1]]
        session = talk.session_id if talk.session_id is not None else self.context.vars.get("sessionId")
        head = [] if self.stateful and session is not None else [{"role": "system", "content": self.system}]
        context = replace(self.context, original_provider=None, completions=None)
        if talk.session_id is not None:
            context = replace(context, vars={**self.context.vars, "sessionId": talk.session_id})
        response = await self.target.complete([*head, *history], context)
        if response.error is not None:
            return replace(response, error=f"{self.target.id} failed {when}: {response.error}")
        talk.answered(response)
        return response


def _flipped(messages: Sequence[Message], instructions: str) -> list[Message]:
    """The conversation as the user model sees it: its own messages are the assistant's."""
    flipped = [
        {"role": "assistant" if message["role"] == "user" else "user", "content": message["content"]}
        for message in messages
    ]
    return [{"role": "system", "content": user_system_prompt(instructions)}, *flipped]


def _message_list(value: Any) -> list[Any]:
    """A list of messages, or a JSON array written as a string (promptfoo takes both)."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return list(value) if isinstance(value, list | tuple) else []


def is_message(item: Any) -> bool:
    """``{role, content}`` with text in both, the role one of ROLES or a template that may render to one."""
    return (
        isinstance(item, Mapping)
        and isinstance(item.get("role"), str)
        and isinstance(item.get("content"), str)
        and (item["role"] in ROLES or "{" in item["role"])
    )


def _message(item: Mapping[str, Any]) -> Message:
    return {"role": str(item["role"]), "content": str(item["content"])}


def make_simulated_user(spec: ProviderSpec) -> SimulatedUser:
    return SimulatedUser(spec)
