"""Prompt functions returning chat messages, and a prompt with its own config."""


def chat(context):
    topic = context["vars"].get("topic", "")
    return [
        {"role": "system", "content": "You answer about {{ topic }}"},
        {"role": "user", "content": f"Tell me about {topic}"},
    ]


def with_config(context):
    return {"prompt": f"Configured for {context['vars'].get('topic', '')}", "config": {"temperature": 0.2}}


def as_object(context):
    return {"question": context["vars"].get("topic", ""), "kind": "object"}
