"""A screening provider: echoes the prompt, and reports promptfoo's guardrails when the prompt holds a
BLOCK-INPUT / BLOCK-OUTPUT / BLOCK marker (a reason after 'because', if any)."""


def call_api(prompt, options, context):
    reply = {"output": prompt}
    if "BLOCK-INPUT" in prompt:
        reply["guardrails"] = {"flagged": True, "flaggedInput": True}
    elif "BLOCK-OUTPUT" in prompt:
        reply["guardrails"] = {"flagged": True, "flaggedOutput": True}
    elif "BLOCK" in prompt:
        reason = prompt.partition("because ")[2]
        reply["guardrails"] = {"flagged": True, **({"reason": reason} if reason else {})}
    elif "CLEAR" in prompt:
        reply["guardrails"] = {"flagged": False}
    return reply
