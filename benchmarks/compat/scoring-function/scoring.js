// The strictest named score decides (assertScoringFunction in JavaScript).
module.exports = (namedScores, context) => {
  const values = Object.values(namedScores);
  const lowest = values.length ? Math.min(...values) : 0;
  return {
    pass: lowest >= 0.5,
    score: lowest,
    reason: `lowest named score ${lowest} of ${context.componentResults.length} results`,
  };
};
