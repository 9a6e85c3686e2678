// an ES module written as .js: promptfoo (Node 22) detects the syntax, evalh compiles it
import { count } from './lib/count.mjs';

export default function (output) {
  return count(output, 'e') >= 2;
}
