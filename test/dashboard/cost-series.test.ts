// The per-day series the costs page draws from cumulative server rollups (web/src/cost-series.ts).
import { describe, expect, it } from 'vitest';
import type { CostRollup } from '../../src/protocol/index.js';
import { perDaySeries, spendDays, windowStart } from '../../web/src/cost-series.js';

const ZERO = { calls: 1, refusedCalls: 0, estimatedCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costNanos: 0 };
function rollup(by: CostRollup['by'], rows: Record<string, number>): CostRollup {
  const list = Object.entries(rows).map(([key, costMicros]) => ({ key, ...ZERO, costMicros }));
  return { by, since: '2026-11-01T00:00:00.000Z', rows: list, total: { ...ZERO, costMicros: list.reduce((s, r) => s + r.costMicros, 0) } };
}

describe('cost series', () => {
  it('per-day values are differences of cumulative sums; the rest past `top` folds into other', () => {
    const days = spendDays(rollup('day', { '2026-11-03': 5, '2026-11-01': 7 }));
    expect(days).toEqual(['2026-11-01', '2026-11-03']);
    // since 11-01: a 3.0, b 1.5, c 0.25; since 11-03: a 1.0, c 0.25.
    const s = perDaySeries(days, [rollup('agent', { a: 3_000_000, b: 1_500_000, c: 250_000 }), rollup('agent', { a: 1_000_000, c: 250_000 })], 2);
    // 11-02 had no spend: it is on the axis with 0, so no line bridges it.
    expect(s.x).toEqual([Date.UTC(2026, 10, 1) / 1000, Date.UTC(2026, 10, 2) / 1000, Date.UTC(2026, 10, 3) / 1000]);
    expect(s.series).toEqual([
      { name: 'a', values: [2, 0, 1] },
      { name: 'b', values: [1.5, 0, 0] },
      { name: 'other (1)', values: [0, 0, 0.25] },
    ]);
  });

  it('a call landing between two requests never makes a day negative; lengths must agree', () => {
    const s = perDaySeries(['2026-11-01', '2026-11-02'], [rollup('agent', { a: 1_000_000 }), rollup('agent', { a: 1_200_000 })]);
    expect(s.series[0]!.values).toEqual([0, 1.2]);
    expect(() => perDaySeries(['2026-11-01'], [])).toThrow('perDaySeries: 1 days but 0 rollups');
  });

  it('the window starts at UTC midnight, whole days back', () => {
    expect(windowStart(1, Date.UTC(2026, 10, 30, 15, 4))).toBe('2026-11-30T00:00:00.000Z');
    expect(windowStart(14, Date.UTC(2026, 10, 30, 15, 4))).toBe('2026-11-17T00:00:00.000Z');
  });
});
