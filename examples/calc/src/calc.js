/** Adds two numbers. */
export function add(a, b) {
  return a + b;
}

/** Multiplies two numbers. */
export function multiply(a, b) {
  return a * b;
}

/** Sums a list of numbers. */
export function sum(xs) {
  let total = 0;
  for (let i = 1; i < xs.length; i++) {
    total += xs[i];
  }
  return total;
}
