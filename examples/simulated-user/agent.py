"""A tiny scripted travel agent: the provider under test of examples/configs/simulated-user.yaml.

It reads the conversation (a chat: the system prompt, then the user's and its own messages, as JSON)
and answers the newest user message. Replace it with your own agent (openai:chat:..., http, ...)."""

import json


def call_api(prompt, options, context):
    messages = json.loads(prompt)
    said = messages[-1]["content"].lower()
    if "oslo" in said:
        answer = "There is a direct flight to Oslo on May 20 at 09:00 for 120 EUR. Shall I book it?"
    elif "yes" in said:
        answer = "Booked: flight FL-42 to Oslo on May 20, 120 EUR. Anything else?"
    else:
        answer = "Where would you like to fly, and when?"
    return {"output": answer, "tokenUsage": {"prompt": 20, "completion": 12, "total": 32}}
