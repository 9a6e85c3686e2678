import json


def get_assert(output, context):
    try:
        return json.loads(output)["score"] > 0.5
    except ValueError:
        return {"pass": False, "score": 0, "reason": "not JSON"}


def long_enough(output, context):
    return len(output) >= 10
