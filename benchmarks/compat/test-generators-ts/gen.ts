interface TestCase {
  vars: { item: string };
  assert: Array<{ type: string; value: string }>;
}

export default async function (): Promise<TestCase[]> {
  return [{ vars: { item: 'book' }, assert: [{ type: 'contains', value: 'book' }] }];
}
