"""A model standing in for an OpenAI chat model that calls tools: the test's `case` var picks a reply,
returned as promptfoo's provider response (`output` = the tool calls, `finishReason`)."""

import json


def call(name, arguments):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": text}}


REPLIES = {
    "weather": ([call("get_weather", {"city": "Paris"})], "tool_calls"),
    "weather-unit": ([call("get_weather", {"city": "Oslo", "unit": "c"})], "tool_calls"),
    "two-tools": (
        [call("get_weather", {"city": "Rome"}), call("search", {"query": "rome events", "limit": 3})],
        "tool_calls",
    ),
    "repeated": ([call("search", {"query": "a"}), call("search", {"query": "b"})], "tool_calls"),
    "wrong-type": ([call("get_weather", {"city": 3})], "tool_calls"),
    "missing-required": ([call("get_weather", {"unit": "f"})], "tool_calls"),
    "bad-enum": ([call("get_weather", {"city": "Lima", "unit": "kelvin"})], "tool_calls"),
    "below-minimum": ([call("search", {"query": "x", "limit": 0})], "tool_calls"),
    "unknown-tool": ([call("launch_rockets", {})], "tool_calls"),
    "one-unknown": ([call("get_weather", {"city": "Rome"}), call("send_email", {"to": "x"})], "tool_calls"),
    "args-not-json": ([call("get_weather", "{city: Paris")], "tool_calls"),
    "message": (
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [call("get_weather", {"city": "Kyiv"})],
        },
        "tool_calls",
    ),
    "text": ("It is sunny in Paris.", "stop"),
    "empty-list": ([], "stop"),
    "truncated": ("It is sunny in", "length"),
    "filtered": ("", "content_filter"),
    "no-reason": ([call("get_weather", {"city": "Paris"})], None),
    "upper-reason": ("Done.", "STOP"),
}


def call_api(prompt, options, context):
    output, finish_reason = REPLIES[context["vars"]["case"]]
    response = {"output": output}
    if finish_reason is not None:
        response["finishReason"] = finish_reason
    return response
