def get_var(var_name, prompt, other_vars):
    return {"error": "no documents for " + other_vars["question"]}
