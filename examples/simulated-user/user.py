"""A scripted user model for examples/configs/simulated-user.yaml: it says the lines its instructions list
("Say, one at a time: a | b | c"), one per turn, then ###STOP###. A real suite names a chat model here
(userProvider: openai:chat:gpt-4o-mini) and writes the instructions as a persona and a goal."""

import json


def call_api(prompt, options, context):
    messages = json.loads(prompt)
    instructions = messages[0]["content"]
    lines = instructions.split("Say, one at a time:", 1)[1].split("\n", 1)[0].split("|")
    said = sum(1 for message in messages[1:] if message["role"] == "assistant")  # its own, flipped
    return lines[said].strip() if said < len(lines) else "###STOP###"
