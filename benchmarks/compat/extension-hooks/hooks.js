// named after a hook: called for that hook only, as fn(context, {hookName})
module.exports.beforeEach = function (context, options) {
  context.test.vars.body = context.test.vars.body + ' (' + options.hookName + ')';
  return context;
};
