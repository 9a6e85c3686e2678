// the module exports the list itself: promptfoo takes it as it is
module.exports = [
  { vars: { word: 'listed', count: 1 }, assert: [{ type: 'contains', value: 'listed 1' }] },
  { vars: { word: 'listed', count: 2 }, assert: [{ type: 'contains', value: 'listed 3' }] },
];
