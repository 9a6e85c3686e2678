type Context = { vars: { topic: string } };

// promptfoo looks file://prompts.mts:formal up on the default export
export default {
  formal: async (context: Context): Promise<string> => `Dear reader, a note on ${context.vars.topic}.`,
};
