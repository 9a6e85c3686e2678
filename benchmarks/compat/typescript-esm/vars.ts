interface Vars {
  topic: string;
  mood: string;
}

// transformVars: the returned vars are merged over the test's
export default function (vars: Vars): Partial<Vars> & { shouting: boolean } {
  return { topic: vars.topic.trim(), shouting: vars.mood === 'loud' };
}
