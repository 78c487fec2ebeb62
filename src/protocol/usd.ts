import { z } from 'zod';

/**
 * Whether `usd` has at most 6 decimals (is a whole number of millionths: micro-dollars), up to
 * binary floating-point noise: within a thousandth of a millionth of one (0.1 + 0.2 =
 * 0.30000000000000004 passes; 0.0000015, half a millionth off, does not). Doubles up to
 * 1,000,000 carry ~2e-4 millionths of noise at most, under the tolerance. Used for amounts
 * ({@link UsdAmount}) and for price rates (model-routes.ts UsdRate).
 */
export function wholeMicros(usd: number): boolean {
  const micros = usd * 1_000_000;
  return Math.abs(micros - Math.round(micros)) <= 0.001;
}

/**
 * An amount of money as people type it, in USD: at least $0.000001 (1 micro-dollar, the unit
 * the store keeps money in; a smaller amount would round to 0 µ$, which for a child's
 * `budgetUsd` would even mean "no limit of its own"), at most $100,000, and with at most 6
 * decimals (a finer amount would be rounded to the micro-dollar without a word; the CLI's
 * usdArg refuses it too).
 */
export const UsdAmount = z
  .number()
  .min(0.000001, 'must be at least 0.000001 (one micro-dollar)')
  .max(100_000)
  .refine((usd) => usd < 0.000001 || wholeMicros(usd), { message: 'must have at most 6 decimals (the smallest step is 0.000001, one micro-dollar)', abort: true });

/** The most a job tree's budget may be, USD: a budget, and a budget after top-ups, is at most this. */
export const MAX_BUDGET_USD = 100_000;
export type UsdAmount = z.infer<typeof UsdAmount>;
