/**
 * Money is integer micro-dollars (1 USD = 1,000,000 µ$) everywhere it is stored or compared.
 */

/** USD (a JSON number such as 1.25) → micro-dollars, rounded to the nearest µ$. @throws RangeError on a negative or non-finite amount. */
export function usdToMicros(usd: number): number {
  if (!Number.isFinite(usd) || usd < 0) throw new RangeError(`amount must be a non-negative number of dollars, got ${usd}`);
  return Math.round(usd * 1_000_000);
}

// The one text of an amount, shared with the dashboard (which reaches only protocol and client).
export { formatMicros } from '../protocol/usd.js';
