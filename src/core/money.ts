/**
 * Money is integer micro-dollars (1 USD = 1,000,000 µ$) everywhere it is stored or compared.
 */

/** USD (a JSON number such as 1.25) → micro-dollars, rounded to the nearest µ$. @throws RangeError on a negative or non-finite amount. */
export function usdToMicros(usd: number): number {
  if (!Number.isFinite(usd) || usd < 0) throw new RangeError(`amount must be a non-negative number of dollars, got ${usd}`);
  return Math.round(usd * 1_000_000);
}

/** Micro-dollars → a display string in USD with up to 6 decimals, e.g. 54399 → "$0.054399". */
export function formatMicros(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(micros));
  const whole = Math.floor(abs / 1_000_000);
  const frac = String(abs % 1_000_000).padStart(6, '0');
  return `${sign}$${whole}.${frac}`;
}
