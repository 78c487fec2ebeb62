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
});
