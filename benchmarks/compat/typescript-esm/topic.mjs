export default (output, context) => ({
  pass: output.toLowerCase().includes(context.vars.topic),
  score: 1,
  reason: `looked for ${context.vars.topic}`,
});
