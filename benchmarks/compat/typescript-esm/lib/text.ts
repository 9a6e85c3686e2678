export const wordCount = (text: string): number => text.split(/\s+/).filter(Boolean).length;
