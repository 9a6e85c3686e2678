module.exports = (output, context) => output.toLowerCase().includes('warm');
