"""A stand-in grader: judges one sentence relevant, answering in the protocol the prompt asks for."""

import json

RELEVANT = "The sky is blue."


def call_api(prompt, options, context):
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    if "relevant_sentences" in text:  # evalh asks for JSON
        return {"output": json.dumps({"relevant_sentences": [RELEVANT]})}
    return {"output": RELEVANT}  # promptfoo asks for the relevant sentences quoted
