"""A stand-in grader for select-best: it picks the first text holding the criteria's last word, and
answers with its index the way a model would ("The best one is 1."). Criteria ending in "nothing" get
an answer with no number; "far" gets an index past the end."""

import json
import re


def prompt_text(prompt):
    try:
        messages = json.loads(prompt) if isinstance(prompt, str) else prompt
    except ValueError:
        return prompt
    if isinstance(messages, list):
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return prompt if isinstance(prompt, str) else json.dumps(prompt)


def call_api(prompt, options, context):
    text = prompt_text(prompt)
    criteria = re.search(r"following criteria: (.*)", text).group(1).strip()
    word = criteria.split()[-1].lower()
    if word == "nothing":
        return {"output": "None of them fits."}
    if word == "far":
        return {"output": "Text 7 is the best."}
    texts = re.findall(r'<Text index="(\d+)">\s*(.*?)\s*</Text>', text, flags=re.S)
    pick = next((index for index, body in texts if word in body.lower()), "0")
    return {"output": f"The best one is {pick}."}
