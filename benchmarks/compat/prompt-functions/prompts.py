def plain(context):
    v = context["vars"]
    return f"Write about {v['topic']} in a {v['tone']} tone."


def chat(context):
    v = context["vars"]
    return [
        {"role": "system", "content": f"You are {v['tone'].upper()}."},
        {"role": "user", "content": f"Tell me about {v['topic']}."},
    ]
