import { wordCount } from './lib/text';

type Context = { vars: Record<string, string> };

interface Verdict {
  pass: boolean;
  score: number;
  reason: string;
}

export default function (output: string, context: Context): Verdict {
  const words = wordCount(output);
  return { pass: words >= 5, score: Math.min(1, words / 10), reason: `${words} words` };
}
