// a custom JavaScript provider as the judge of llm-rubric: it answers with promptfoo's grading JSON
module.exports = class KeywordGrader {
  id() {
    return 'keyword-grader';
  }

  async callApi(prompt) {
    const pass = /sunny|warm/i.test(prompt.split('<Output>').pop() || prompt);
    return {
      output: JSON.stringify({ pass, score: pass ? 1 : 0, reason: pass ? 'mentions the weather' : 'no weather' }),
    };
  }
};
