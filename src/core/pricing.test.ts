import { describe, it, expect } from 'vitest';
import { callCost, costMicros, type ModelPrice } from './pricing.js';
import { formatMicros, usdToMicros } from './money.js';

const sonnet: ModelPrice = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const u = (i: number, o: number, cr: number, cw: number) => ({ inputTokens: i, outputTokens: o, cacheReadTokens: cr, cacheWriteTokens: cw });

describe('costMicros', () => {
  it('prices each category separately (worked by hand)', () => {
    // 3×3 + 12,304×3.75 + 550×15 = 9 + 46,140 + 8,250 = 54,399 µ$
    expect(costMicros(u(3, 550, 0, 12_304), sonnet)).toBe(54_399);
    // 100×3 + 2,000×3.75 + 50,000×0.3 + 1,000×15 = 300 + 7,500 + 15,000 + 15,000 = 37,800 µ$
    expect(costMicros(u(100, 1_000, 50_000, 2_000), sonnet)).toBe(37_800);
  });
  it('rounds half up once, at the end', () => {
    // 4×3 + 2,455×0.3 + 23×15 = 12 + 736.5 + 345 = 1,093.5 → 1,094
    expect(costMicros(u(4, 23, 2_455, 0), sonnet)).toBe(1_094);
  });
  it('charges a call that costs anything at least 1 µ$, and a call that costs nothing 0', () => {
    const haiku: ModelPrice = { input: 0.1, output: 0.4, cacheWrite5m: 0.125, cacheWrite1h: 0.2, cacheRead: 0.01 };
    // 4 × 0.1 = 0.4 µ$: half up alone gave 0 (a fresh tester's 25 served calls were free); 400 n$ exact
    expect(callCost(u(4, 0, 0, 0), haiku)).toMatchObject({ micros: 1, nanos: 400 });
    // 1 × 0.01 = 0.01 µ$ → 1 µ$; 10 n$
    expect(callCost(u(0, 0, 1, 0), haiku)).toMatchObject({ micros: 1, nanos: 10 });
    // from 0.5 µ$ up, half up as before: 14 × 0.1 = 1.4 → 1; 15 × 0.1 = 1.5 → 2
    expect(costMicros(u(14, 0, 0, 0), haiku)).toBe(1);
    expect(costMicros(u(15, 0, 0, 0), haiku)).toBe(2);
    expect(callCost(u(0, 0, 0, 0), haiku)).toMatchObject({ micros: 0, nanos: 0 });
  });
  it('prices 1-hour cache writes at their own rate', () => {
    expect(costMicros({ ...u(0, 0, 0, 1_000), cacheWrite1hTokens: 400 }, sonnet)).toBe(600 * 3.75 + 400 * 6);
  });
});

describe('money', () => {
  it('converts and formats', () => {
    expect(usdToMicros(1.25)).toBe(1_250_000);
    expect(formatMicros(54_399)).toBe('$0.054399');
    expect(formatMicros(12_000_001)).toBe('$12.000001');
    expect(() => usdToMicros(-1)).toThrow(/non-negative/);
  });
});
