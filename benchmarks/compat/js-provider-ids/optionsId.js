// the id promptfoo passes in: the provider's own id from the config (file://optionsId.js)
module.exports = class OptionsIdProvider {
  constructor(options) {
    this.providerId = options.id;
  }

  id() {
    return this.providerId;
  }

  callApi(prompt) {
    return { output: `${this.providerId}: ${prompt}` };
  }
};
