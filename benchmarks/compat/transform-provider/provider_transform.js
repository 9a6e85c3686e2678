module.exports = (output, context) => `<${output}>`;
