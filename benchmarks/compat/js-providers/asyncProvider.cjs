// class fields and an async callApi returning a promise, as promptfoo's docs show
module.exports = class AsyncProvider {
  id = () => 'async-provider';

  callApi = async (prompt, context) => {
    const words = await Promise.resolve(prompt.split(/\s+/).length);
    if (context.vars.topic === 'errors') {
      return { error: 'the model refused this topic' };
    }
    return { output: JSON.stringify({ words, topic: context.vars.topic }) };
  };
};
