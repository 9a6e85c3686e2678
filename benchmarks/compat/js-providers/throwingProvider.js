module.exports = class ThrowingProvider {
  id() {
    return 'throwing-provider';
  }

  async callApi(prompt, context) {
    if (context.vars.topic === 'errors') {
      throw new Error('upstream unavailable');
    }
    return { output: `fine: ${prompt}` };
  }
};
