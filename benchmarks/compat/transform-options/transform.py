def reverse(output, context):
    return output[::-1]


def get_transform(output, context):
    return output.strip()
