def get_transform(vars, context):
    return {**vars, "upper": "FROM-PY", "count": len(vars["name"])}
