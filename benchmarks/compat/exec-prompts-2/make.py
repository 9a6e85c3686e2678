"""An exec: prompt: promptfoo runs it with the context as JSON in the last argument; stdout is the prompt.
What it prints depends on vars.mode."""

import json
import sys

context = json.loads(sys.argv[-1])
variables = context["vars"]
mode = variables.get("mode")
if mode == "context":
    provider = context.get("provider") or {}
    config = json.dumps(context.get("config"), sort_keys=True)
    print(f"keys={sorted(context)} vars={sorted(variables)} id={provider.get('id')} config={config}")
elif mode == "chat":
    messages = [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": f"About {variables['topic']}"},
    ]
    print(json.dumps(messages))
elif mode == "template":
    print("Tell me about {{ topic }} please")
elif mode == "spaces":
    print("   padded prompt   \n\n")
elif mode == "stderr":
    print("a warning", file=sys.stderr)
    print("still here")
elif mode == "stderr-only":
    print("only an error", file=sys.stderr)
elif mode == "exit":
    print("partial")
    sys.exit(3)
else:
    print("args=" + " ".join(sys.argv[1:-1]))
