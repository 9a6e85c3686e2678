def get_var(var_name, prompt, other_vars):
    question = other_vars["question"]
    return {"output": f"  <docs for {question} as {var_name}>\n"}
