// the value is data: promptfoo renders it again (it would say "braces"), evalh does not
module.exports = (varName, prompt, vars, provider) => ({ output: `{{question}} via ${provider.label || provider.id}` });
