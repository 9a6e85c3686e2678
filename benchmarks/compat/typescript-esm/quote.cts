const quoted = (text: string): boolean => /«[a-z]+»/.test(text);
module.exports = (output: string): boolean => !quoted(output);
