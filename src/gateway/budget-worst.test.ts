import { describe, expect, it } from 'vitest';
import { worstCaseMicros } from './budget.js';

// Sonnet-like prices in USD per million tokens (= µ$ per token).
const price = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };

describe('worstCaseMicros', () => {
  it('⌈bytes/3⌉ input tokens at the highest input-side rate plus max_tokens at the output rate', () => {
    // 300 bytes → 100 tokens × 6 µ$ (1 h cache write) + 1,000 × 15 µ$
    expect(worstCaseMicros(300, 1000, price)).toBe(15_600);
    // 301 bytes → 101 tokens; no max_tokens → 32,000 assumed
    expect(worstCaseMicros(301, undefined, price)).toBe(101 * 6 + 32_000 * 15);
  });
  it('is at most the largest safe integer, so an absurd max_tokens is refused by the budget, not a 500', () => {
    expect(worstCaseMicros(10, Number.MAX_SAFE_INTEGER, price)).toBe(Number.MAX_SAFE_INTEGER);
    expect(Number.isSafeInteger(worstCaseMicros(10, 1e300, price))).toBe(true);
  });
  it('equals the exact integer formula (⌈(tokens × rate in 10⁻⁶ µ$) / 10⁶⌉, in BigInt) for any sizes and prices', () => {
    const exact = (bytes: number, maxTokens: number, p: typeof price): number => {
      const inRate = BigInt(Math.round(Math.max(p.input, p.cacheWrite5m, p.cacheWrite1h) * 1e6));
      const total = BigInt(Math.ceil(bytes / 3)) * inRate + BigInt(maxTokens) * BigInt(Math.round(p.output * 1e6));
      return Number((total + 999_999n) / 1_000_000n);
    };
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    const rates = [0, 0.08, 0.1, 0.25, 0.3, 0.8, 1, 1.25, 3, 3.75, 6, 15, 75, 0.000001, 123.456789];
    for (let i = 0; i < 20_000; i++) {
      const p = { input: rates[rnd(rates.length)]!, output: rates[rnd(rates.length)]!, cacheWrite5m: rates[rnd(rates.length)]!, cacheWrite1h: rates[rnd(rates.length)]!, cacheRead: 0 };
      const bytes = rnd(4) === 0 ? rnd(10) : rnd(2 ** 30);
      const maxTokens = rnd(3) === 0 ? 1 + rnd(100) : 1 + rnd(2 ** 30);
      expect(worstCaseMicros(bytes, maxTokens, p)).toBe(exact(bytes, maxTokens, p));
    }
    // near 2^53 µ$: the sum no longer fits a double exactly; the exact path still answers
    expect(worstCaseMicros(3, 2 ** 46, { ...price, output: 127.999999 })).toBe(exact(3, 2 ** 46, { ...price, output: 127.999999 }));
  });
});
