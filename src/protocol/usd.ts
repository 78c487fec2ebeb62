import { z } from 'zod';

/**
 * Whether `usd` has at most 6 decimals (is a whole number of millionths: micro-dollars), up to
 * binary floating-point noise: `usd` × 10⁶ within max(10⁻⁶, 10⁻¹⁵ × itself) of a whole number.
 * The noise of a double with 6 decimals, times 10⁶, is a few units in the last place of the
 * product (relative 2⁻⁵² each): under 10⁻⁹ near 1 µ$... $1 and ~3·10⁻⁴ at $1,000,000 — so
 * 0.1 + 0.2 = 0.30000000000000004 passes, while 0.0000015 (half a millionth off), 0.0000010001
 * and 1.0000000001 (10⁻⁴ of a millionth off) do not (a fixed tolerance of 10⁻³ millionths let
 * those last two through, rounded without a word). Used for amounts ({@link UsdAmount}) and
 * for price rates (model-routes.ts UsdRate).
 */
export function wholeMicros(usd: number): boolean {
  const micros = usd * 1_000_000;
  return Math.abs(micros - Math.round(micros)) <= Math.max(1e-6, Math.abs(micros) * 1e-15);
}

/**
 * Micro-dollars → USD text with all 6 decimals, in integer arithmetic (exact; no binary float
 * rounding), e.g. 54399 → "$0.054399", -11 → "-$0.000011". The one text of an amount: the CLI
 * and the dashboard print every figure with it, so they agree to the µ$. A fraction of a µ$
 * is cut off (amounts are whole µ$).
 */
export function formatMicros(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(micros));
  const whole = Math.floor(abs / 1_000_000);
  const frac = String(abs % 1_000_000).padStart(6, '0');
  return `${sign}$${whole}.${frac}`;
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
  .max(100_000, 'must be at most 100000 (the cap on a job tree\'s budget, USD)')
  // out of range: that one message only (1e308 × 10⁶ is Infinity, not a whole number of µ$)
  .refine((usd) => usd < 0.000001 || usd > 100_000 || wholeMicros(usd), { message: 'must have at most 6 decimals (the smallest step is 0.000001, one micro-dollar)', abort: true });

/**
 * A dollar amount or rate as written by a person (a CLI flag, a `FLOTILLA_*` variable, a
 * flotilla.yaml price): digits with an optional fraction, or a fraction alone (`1`, `0.5`,
 * `.5`). `Number()` and YAML also read `0x10` (16), `1e3`, `+5`, `5.` or `Infinity`; none of
 * those is how a price is written, and each reads as another amount than a reader sees.
 */
export const PLAIN_DECIMAL = /^(?:\d+(?:\.\d+)?|\.\d+)$/;

/** The most a job tree's budget may be, USD: a budget, and a budget after top-ups, is at most this. */
export const MAX_BUDGET_USD = 100_000;
export type UsdAmount = z.infer<typeof UsdAmount>;
