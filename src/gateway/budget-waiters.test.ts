/**
 * BudgetWaiters over a fake store (figures in µ$): which refusals are watched, and when the
 * tree (or the child's sub-limit that refused) has room again. The end-to-end cases, with the
 * real gateway, store and control-plane hooks, are in server/budget-pause.test.ts and
 * server/gateway-live.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import type { TreeBudget } from '../store/types.js';
import { BudgetWaiters, refusedByCallsInFlight } from './budget-waiters.js';

const fig = (limit: number, spent: number, reserved: number, jobId?: number): TreeBudget => ({ rootId: 1, ...(jobId !== undefined ? { jobId } : {}), limitMicros: limit, spentMicros: spent, reservedMicros: reserved, remainingMicros: Math.max(0, limit - spent - reserved) });

describe('refusedByCallsInFlight', () => {
  it('only when spent + the worst case fit the limit and other calls hold reservations', () => {
    expect(refusedByCallsInFlight(fig(1_000_000, 900_000, 80_000), 40_000)).toBe(true);
    expect(refusedByCallsInFlight(fig(1_000_000, 900_000, 80_000), 100_000)).toBe(true); // exactly fits
    expect(refusedByCallsInFlight(fig(1_000_000, 990_000, 0), 40_000)).toBe(false);
    expect(refusedByCallsInFlight(fig(1_000_000, 970_000, 20_000), 40_000)).toBe(false); // out of money whatever settles
    expect(refusedByCallsInFlight(null, 1)).toBe(false);
  });
});

describe('BudgetWaiters', () => {
  /** Waiters over mutable figures; `resumed` collects the resume calls. */
  function setUp(tree: TreeBudget, own?: TreeBudget) {
    const figures = { tree, own };
    const resumed: Array<[number, string]> = [];
    const w = new BudgetWaiters(
      { getTreeBudget: async () => figures.tree, getJobBudget: async () => figures.own ?? null },
      async (rootId, why) => void resumed.push([rootId, why]),
      silentLogger,
    );
    return { w, figures, resumed };
  }
  const settle = () => new Promise((r) => setTimeout(r, 20));

  it('resumes once the tree has the worst case left, then forgets the tree', async () => {
    const { w, figures, resumed } = setUp(fig(1_000_000, 900_000, 80_000));
    expect(w.refused(5, 1, 40_000, figures.tree)).toBe(true);
    await settle();
    expect(resumed).toEqual([]); // 20,000 left: still held by the calls in flight
    figures.tree = fig(1_000_000, 903_060, 40_000); // one settled at 3,060: 56,940 left
    w.settled(1);
    await settle();
    expect(resumed).toEqual([[1, 'the calls in flight in job tree 1 settled: $0.056940 of its budget left']]);
    expect(w.size).toBe(0);
    w.settled(1);
    await settle();
    expect(resumed).toHaveLength(1);
  });

  it('drops the wait when nothing is in flight any more and there is still no room (a top-up is needed)', async () => {
    const { w, figures, resumed } = setUp(fig(1_000_000, 900_000, 80_000));
    w.refused(5, 1, 40_000, figures.tree);
    figures.tree = fig(1_000_000, 970_000, 0);
    w.settled(1);
    await settle();
    expect(resumed).toEqual([]);
    expect(w.size).toBe(0);
  });

  it('a refusal by a child sub-limit waits for room in that sub-limit too', async () => {
    const { w, figures, resumed } = setUp(fig(10_000_000, 1_000_000, 100_000), fig(200_000, 150_000, 40_000, 7));
    expect(w.refused(7, 1, 30_000, figures.own!)).toBe(true);
    await settle();
    expect(resumed).toEqual([]); // the tree has room, the sub-limit 10,000
    figures.own = fig(200_000, 151_000, 0, 7);
    w.settled(1);
    await settle();
    expect(resumed.map((r) => r[0])).toEqual([1]);
  });

  it('does not watch a refusal where even spent + the worst case exceed the limit', () => {
    const { w } = setUp(fig(1_000_000, 990_000, 0));
    expect(w.refused(5, 1, 40_000, fig(1_000_000, 990_000, 0))).toBe(false);
    expect(w.size).toBe(0);
  });
});
