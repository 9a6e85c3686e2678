function makeTests() {
  return [{ description: 'named', vars: { word: 'named', count: 2 }, assert: [{ type: 'starts-with', value: 'Say named' }] }];
}
function withConfig(config) {
  return config.words.map(function (w, i) {
    return { vars: { word: w, count: i }, assert: [{ type: 'javascript', value: 'output.includes("' + w + '")' }] };
  });
}
module.exports = { makeTests: makeTests, withConfig: withConfig };
