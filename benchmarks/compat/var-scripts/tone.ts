// a TypeScript var script: promptfoo imports it; evalh transpiles it for the embedded engine
interface Result { output: string }
export default function (varName: string, prompt: string, vars: Record<string, string>): Result {
  return { output: `${varName} in a ${vars.mood} tone` };
}
