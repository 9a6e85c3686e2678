def cases(config):
    checks = [{"type": "not-contains", "value": "snow"}]
    return [
        {"vars": {"topic": topic}, "assert": [{"type": "contains", "value": topic}, *checks]}
        for topic in config["topics"]
    ]
