const helpers = require('./helpers.js');

module.exports.mentionsWeather = (output) => /sunny|rain|cloud/.test(output);

module.exports.wordScore = function (output, context) {
  return Math.min(1, helpers.countWords(output) / 10);
};

module.exports.graded = (output, context) => ({
  pass: output.length > 10,
  score: output.length > 10 ? 1 : 0,
  reason: `length ${output.length} for ${context.vars.text.length}`,
});

module.exports.usesConfig = (output, context) => output.includes(context.config.word);
