// a transpiled ES module's shape: the class under `default`
class DefaultProvider {
  constructor(options) {
    this.options = options;
  }
  id() {
    return 'default-export';
  }
  async callApi(prompt) {
    return { output: `default says ${prompt.length} chars; basePath set: ${Boolean(this.options.config.basePath)}` };
  }
}
exports.default = DefaultProvider;
