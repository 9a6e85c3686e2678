export const count = (text, letter) => text.split(letter).length - 1;
