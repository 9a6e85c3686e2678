module.exports = function (output) {
  return output.length > 5;
};
module.exports.endsWithName = function (output, context) {
  return output.endsWith(context.vars.name);
};
