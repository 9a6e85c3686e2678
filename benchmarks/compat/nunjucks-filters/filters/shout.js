module.exports = (value) => `${value.toUpperCase()}!`;
