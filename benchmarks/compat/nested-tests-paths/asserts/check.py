def get_assert(output, context):
    return output.startswith("Dear")
