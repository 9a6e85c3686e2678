"""A stand-in grader for trajectory:goal-success: the goal names the tool that reaches it (its last
word); the goal is reached when the trajectory summary holds a tool step of that name. It reads the
<Goal> and <Trajectory> blocks both tools' grading prompts end with, and answers {reason, pass, score}."""

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


def last_block(text, tag):
    found = re.findall(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, flags=re.S)
    return found[-1] if found else ""


def call_api(prompt, options, context):
    text = prompt_text(prompt)
    tool = last_block(text, "Goal").split()[-1]
    try:
        steps = json.loads(last_block(text, "Trajectory")).get("steps", [])
    except ValueError:
        steps = []
    used = [s.get("name") for s in steps if isinstance(s, dict) and s.get("type") == "tool"]
    reached = tool in used
    verdict = {
        "reason": f"{tool} {'was' if reached else 'was not'} used (tools: {', '.join(used) or 'none'})",
        "pass": reached,
        "score": 1.0 if reached else 0.0,
    }
    return {"output": json.dumps(verdict)}
