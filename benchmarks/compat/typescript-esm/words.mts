export function lastWord(output: string): string {
  const words: string[] = output.split(' ');
  return words[words.length - 1].replace(/[^a-z]/gi, '').toLowerCase();
}
