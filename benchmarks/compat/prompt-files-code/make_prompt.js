module.exports = function ({ vars }) {
  return `Describe the city of ${vars.city}.`;
};
