"""Test generators: each returns a list of tests (promptfoo's default name is generate_tests)."""


def generate_tests(config=None):
    return [
        {
            "description": f"generated {word}",
            "vars": {"word": word, "count": index},
            "assert": [{"type": "contains", "value": word}, {"type": "icontains", "value": "SAY"}],
        }
        for index, word in enumerate(["apple", "pear"], start=1)
    ] + [{"vars": {"word": "wrong", "count": 0}, "assert": [{"type": "contains", "value": "right"}]}]


def with_config(config):
    return [
        {
            "vars": {"word": config["word"], "count": n},
            "assert": [{"type": "equals", "value": f"Say {config['word']} {n} times"}],
        }
        for n in range(config["count"])
    ]
