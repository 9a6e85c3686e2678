counter = 0


def extension_hook(hook_name, context):
    global counter
    if hook_name == "beforeAll":
        context["suite"]["tests"].append(
            {
                "vars": {"body": "It's a beautiful day", "language": "Spanish"},
                "assert": [{"type": "contains", "value": "beautiful"}],
            }
        )
        context["suite"]["defaultTest"]["assert"].append({"type": "contains", "value": "Rephrase"})
        return context
    elif hook_name == "beforeEach":
        context["test"]["vars"]["language"] = f"Pirate {context['test']['vars']['language']}"
        return context
    elif hook_name == "afterEach":
        counter += 1
