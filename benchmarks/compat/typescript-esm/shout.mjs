export default function (output, context) {
  return context.vars.mood === 'loud' ? output.toUpperCase() : output;
}
