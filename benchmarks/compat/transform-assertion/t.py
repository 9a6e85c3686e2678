def drop_first(output, context):
    return output[1:][::-1]
