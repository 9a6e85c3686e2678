def call_api(prompt, options, context):
    return {"output": f"py says {prompt}"}


def shout(prompt, options, context):
    return {"output": prompt.upper() + "!"}
