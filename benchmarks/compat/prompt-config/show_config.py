def call_api(prompt, options, context):
    config = options.get("config", {})
    return {"output": f"{prompt} | style={config.get('style')} temperature={config.get('temperature')}"}
