import { describe, expect, it } from 'vitest';
import { UsdAmount } from './usd.js';

// UsdAmount: the API's dollar fields (budgetUsd, addUsd, an agent's defaultBudgetUsd).
describe('UsdAmount', () => {
  it('takes whole numbers of micro-dollars, float noise included', () => {
    for (const usd of [0.000001, 0.5, 2, 1.123456, 100_000, 0.1 + 0.2, 99_999.999999]) expect(UsdAmount.safeParse(usd).success, String(usd)).toBe(true);
  });

  it('refuses an amount finer than a micro-dollar, naming the rule (it was rounded without a word)', () => {
    for (const usd of [0.0000015, 0.0012345678, 1.1234567, 99_999.9999995]) {
      const r = UsdAmount.safeParse(usd);
      expect(r.success ? 'accepted' : r.error.issues.map((i) => i.message), String(usd)).toEqual(['must have at most 6 decimals (the smallest step is 0.000001, one micro-dollar)']);
    }
  });

  it('below a micro-dollar or above the cap: one message each, not two', () => {
    const tiny = UsdAmount.safeParse(0.0000004);
    expect(tiny.success ? [] : tiny.error.issues.map((i) => i.message)).toEqual(['must be at least 0.000001 (one micro-dollar)']);
    expect(UsdAmount.safeParse(100_000.5).success).toBe(false);
  });
});
