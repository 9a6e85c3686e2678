"""Scoring functions for assertScoringFunction: the verdict from the named scores and the results."""


def func(named_scores, context):
    """The default function: pass when the mean of the named scores reaches 0.5."""
    scores = list(named_scores.values())
    mean = sum(scores) / len(scores) if scores else 0.0
    return {"pass": mean >= 0.5, "score": mean, "reason": f"mean of {len(scores)} named scores is {mean:.2f}"}


def any_pass(named_scores, context):
    """Pass when any assertion passed; the context's threshold, when set, is the least score."""
    results = context["componentResults"]
    passed = [r for r in results if r["pass"]]
    score = len(passed) / len(results) if results else 0.0
    threshold = context.get("threshold", 0)
    return {
        "pass": bool(passed) and score >= threshold,
        "score": score,
        "reason": f"{len(passed)} of {len(results)} passed ({results[0]['assertion']['type']} first)",
        "namedScores": {"passed_share": score},
    }


def broken(named_scores, context):
    return {"pass": "yes"}
