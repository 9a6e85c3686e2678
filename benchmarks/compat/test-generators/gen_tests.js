// module.exports is the generator: called with the config (undefined here); may be async
module.exports = async function () {
  return [
    { vars: { word: 'js', count: 7 }, assert: [{ type: 'contains', value: 'js 7' }] },
    { vars: { word: 'js', count: 8 }, assert: [{ type: 'contains', value: 'js 9' }] },
  ];
};
