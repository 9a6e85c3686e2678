module.exports.greeting = async ({ vars, provider }) => `Hello! Topic: ${vars.topic}, tone ${vars.tone}`;
