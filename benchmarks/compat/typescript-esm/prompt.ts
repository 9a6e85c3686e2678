import { Mood, opening } from './lib/moods';

interface PromptContext {
  vars: { topic: string; mood: string };
  provider?: { id: string };
}

export default function prompt(context: PromptContext): string {
  const mood = context.vars.mood as Mood;
  return `${opening(mood)} Write about ${context.vars.topic}`;
}
