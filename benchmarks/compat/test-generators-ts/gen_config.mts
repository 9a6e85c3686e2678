// only named exports: promptfoo looks a named function up on the default export when there is one
type Item = { vars: { item: string }; assert: Array<{ type: string; value: string }> };

export function withConfig(config: { items: string[] }): Item[] {
  return config.items.map((item: string) => ({
    vars: { item },
    assert: [{ type: 'contains', value: item === 'car' ? 'car' : 'train' }],
  }));
}
