import { describe, expect, it } from 'vitest';
import { UsdAmount, wholeMicros } from './usd.js';
import { UsdRate } from './model-routes.js';

// UsdAmount: the API's dollar fields (budgetUsd, addUsd, an agent's defaultBudgetUsd).
describe('UsdAmount', () => {
  it('takes whole numbers of micro-dollars, float noise included', () => {
    for (const usd of [0.000001, 0.5, 2, 1.123456, 100_000, 0.1 + 0.2, 99_999.999999]) expect(UsdAmount.safeParse(usd).success, String(usd)).toBe(true);
  });

  it('refuses an amount finer than a micro-dollar, naming the rule (it was rounded without a word)', () => {
    // 0.0000010001 and 1.0000000001 are 10⁻⁴ of a micro-dollar off: a fixed tolerance let them through
    for (const usd of [0.0000015, 0.0012345678, 1.1234567, 99_999.9999995, 0.0000010001, 1.0000000001, 2.00000001]) {
      const r = UsdAmount.safeParse(usd);
      expect(r.success ? 'accepted' : r.error.issues.map((i) => i.message), String(usd)).toEqual(['must have at most 6 decimals (the smallest step is 0.000001, one micro-dollar)']);
    }
  });

  it('below a micro-dollar or above the cap: one message each, not two', () => {
    const tiny = UsdAmount.safeParse(0.0000004);
    expect(tiny.success ? [] : tiny.error.issues.map((i) => i.message)).toEqual(['must be at least 0.000001 (one micro-dollar)']);
    // the cap said as the other amount errors say theirs (a fresh tester: "Too big: expected number to be <=100000")
    const big = UsdAmount.safeParse(100_000.5);
    expect(big.success ? [] : big.error.issues.map((i) => i.message)).toEqual(["must be at most 100000 (the cap on a job tree's budget, USD)"]);
    // 1e308 × 10⁶ is Infinity: it was also told "must have at most 6 decimals" (a fresh user's finding)
    for (const usd of [1e308, 1e303]) {
      const huge = UsdAmount.safeParse(usd);
      expect(huge.success ? [] : huge.error.issues.map((i) => i.code), String(usd)).toEqual(['too_big']);
      const rate = UsdRate.safeParse(usd);
      expect(rate.success ? [] : rate.error.issues.map((i) => i.code), String(usd)).toEqual(['too_big']);
    }
  });
});

describe('wholeMicros (amounts and price rates)', () => {
  it('every number of whole micro-dollars up to $1,000,000 passes (as typed: n / 10⁶, a double), whatever its size', () => {
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 20_000; i++) {
      const scale = 10 ** Math.floor(next() * 13); // 1 µ$ .. 10¹² µ$ ($1,000,000)
      const n = Math.min(1e12, Math.floor(next() * scale));
      const usd = Number((n / 1e6).toFixed(6));
      expect(wholeMicros(usd), String(usd)).toBe(true);
    }
    for (const usd of [999_999.999999, 0.1 + 0.2, 0.7 * 3, 1e6]) expect(wholeMicros(usd), String(usd)).toBe(true);
  });

  it('price rates: finer than 6 decimals refused at any size', () => {
    for (const rate of [1.0000000001, 0.0000001, 3.0000005, 999_999.9999995]) expect(UsdRate.safeParse(rate).success, String(rate)).toBe(false);
    for (const rate of [1.000001, 0.000001, 999_999.999999, 3.75]) expect(UsdRate.safeParse(rate).success, String(rate)).toBe(true);
  });
});
