"""A stand-in grader for conversation-relevance: a window is irrelevant when its last assistant message
mentions the stock market or the weather on Mars; the reason prompt gets a fixed summary. It reads the
messages JSON both tools' prompt (promptfoo's, word for word) ends with."""

import json


def call_api(prompt, options, context):
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    try:
        messages = json.loads(text)
        if isinstance(messages, list):
            text = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    except ValueError:
        pass
    if text.startswith("Below is a list of irrelevancies"):
        return {"output": json.dumps({"reason": "The score is low because one reply went off topic."})}
    window = json.loads(text.rpartition("\nMessages:\n")[2].removesuffix("\n\nJSON:"))
    last = window[-1]["content"].lower()
    if "stock market" in last or "mars" in last:
        return {"output": json.dumps({"verdict": "no", "reason": "The reply is off topic."})}
    return {"output": json.dumps({"verdict": "yes"})}
