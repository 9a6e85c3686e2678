export function cases() {
  return [{ vars: { item: 'pen' }, assert: [{ type: 'starts-with', value: 'Review' }] }];
}
