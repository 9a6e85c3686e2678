// promptfoo's custom provider: a class built with new (options: {id, config, env}), callApi per row
const { shout } = require('./lib/words');

class ClassProvider {
  constructor(options) {
    this.providerId = options.id || 'class-provider';
    this.config = options.config || {};
    this.calls = 0;
  }

  id() {
    return this.providerId;
  }

  callApi(prompt, context) {
    this.calls += 1;
    const prefix = this.config.prefix || '';
    const text = this.config.loud ? shout(prompt) : prompt;
    return {
      output: `${prefix}${text} (topic=${context.vars.topic})`,
      tokenUsage: { prompt: 3, completion: 4, total: 7 },
    };
  }
}

module.exports = ClassProvider;
