export default (value: string): string => `«${value}»`;
