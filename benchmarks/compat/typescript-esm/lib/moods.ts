export type Mood = 'calm' | 'loud';

export enum Volume {
  Quiet = 1,
  Loud = 3,
}

export function opening(mood: Mood): string {
  return mood === 'loud' ? 'Hey!'.repeat(Volume.Loud) : 'Hello.';
}
