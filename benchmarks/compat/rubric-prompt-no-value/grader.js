// the judge: passes an output that mentions the weather, and says which rubric it was given
module.exports = class WeatherGrader {
  id() {
    return 'weather-grader';
  }

  async callApi(prompt) {
    const rubric = (prompt.match(/Rubric: \[(.*?)\]/) || ['', '?'])[1];
    const pass = /sunny|warm/i.test(prompt.split('Output:').pop() || '');
    return { output: JSON.stringify({ pass, score: pass ? 1 : 0, reason: `rubric [${rubric}]` }) };
  }
};
