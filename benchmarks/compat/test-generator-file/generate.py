def cases(config):
    return [
        {"vars": {"topic": topic}, "assert": [{"type": "contains", "value": topic}, {"type": "not-contains", "value": "snow"}]}
        for topic in config["topics"]
    ]
