def get_var(var_name, prompt, other_vars):
    # the prompt is the template as written, not rendered
    return {"output": "raw=" + prompt.replace("{{", "[").replace("}}", "]")}
