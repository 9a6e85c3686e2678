module.exports = (vars, context) => ({ ...vars, upper: 'FROM-JS', count: vars.name.length });
