// no label in the config: promptfoo's rows and columns name the provider by the id() it gives itself
module.exports = class NamedProvider {
  constructor(options) {
    this.suffix = (options.config && options.config.suffix) || '';
  }

  id() {
    return 'my-named-provider';
  }

  async callApi(prompt, context) {
    return { output: `${prompt}${this.suffix} #${context.vars.n}` };
  }
};
