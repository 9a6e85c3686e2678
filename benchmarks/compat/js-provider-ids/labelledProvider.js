// a label of its own wins over the config's (promptfoo: provider.label ||= options.label)
module.exports = class LabelledProvider {
  label = 'own-label';

  id() {
    return 'labelled-provider';
  }

  callApi(prompt) {
    return { output: prompt.split('').reverse().join('') };
  }
};
