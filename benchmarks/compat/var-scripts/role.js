module.exports = function (varName, prompt, vars) {
  return { output: `${varName} for ${vars.role}` };
};
