type Context = { vars: Record<string, string> };

export function mentionsTopic(output: string, context: Context): boolean {
  return output.toLowerCase().includes(String(context.vars.topic).toLowerCase());
}

export const scored = (output: string): number => Math.min(1, output.length / 60);
