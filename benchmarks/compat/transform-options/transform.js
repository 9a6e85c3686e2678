module.exports = (output, context) => `[${output}]`;
module.exports.shout = (output) => output.toUpperCase() + '!';
