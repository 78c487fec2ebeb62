import { expect, it } from 'vitest';
import { T, newJob, type Harness } from './harness.js';

/** Child sub-limits (issue 6, store/job-budgets.ts): reserved with the tree's budget, atomically. */
export function jobBudgetTests(h: Harness): void {
  it('job budgets: a $0.10 sub-limit in a $10 tree stops concurrent reservations at the sub-limit; siblings still fit', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const root = await newJob(s, { budgetMicros: 10_000_000 });
    const child = await newJob(s, { parentId: root.id, budgetMicros: 100_000 });
    const grandchild = await newJob(s, { parentId: child.id, budgetMicros: 0 }); // shares the child's sub-limit
    const sibling = await newJob(s, { parentId: root.id, budgetMicros: 0 });
    expect(await s.getJobBudget(root.id, T)).toBeNull();
    expect(await s.getJobBudget(sibling.id, T)).toBeNull();
    expect(await s.getJobBudget(child.id, T)).toEqual({ rootId: root.id, jobId: child.id, limitMicros: 100_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 100_000 });
    // 20 × 30,000 µ$ concurrently, half from the grandchild: 100,000 / 30,000 → exactly 3 fit
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? s2 : s).reserveBudget(root.id, 30_000, T, undefined, i % 4 < 2 ? child.id : grandchild.id)));
    const ok = results.filter((r) => r?.ok);
    expect(ok.length).toBe(3);
    const refused = results.find((r) => r && !r.ok);
    expect(refused).toEqual({ ok: false, budget: { rootId: root.id, jobId: child.id, limitMicros: 100_000, spentMicros: 0, reservedMicros: 90_000, remainingMicros: 10_000 } });
    expect(await s.getJobBudget(child.id, T)).toMatchObject({ reservedMicros: 90_000, remainingMicros: 10_000 });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ reservedMicros: 90_000, remainingMicros: 9_910_000 });
    // the tree still has room for a sibling (no sub-limit) and the root
    const sib = await s.reserveBudget(root.id, 5_000_000, T, undefined, sibling.id);
    expect(sib).toMatchObject({ ok: true, budget: { reservedMicros: 5_090_000 } });
    // settle one child call at 25,000: both rows charged, both reservations given back
    const first = ok[0]!;
    if (!first.ok) throw new Error('unreachable');
    expect(await s.settleBudget(root.id, first.reservationId, 25_000, T)).toBe(true);
    expect(await s.getJobBudget(child.id, T)).toMatchObject({ spentMicros: 25_000, reservedMicros: 60_000, remainingMicros: 15_000 });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 25_000, reservedMicros: 5_060_000 });
    // the sweeper charges the rest (never settled: H7) on both rows (expired: default TTL 30 min)
    await s.releaseExpiredReservations(T + 31 * 60_000);
    expect(await s.getJobBudget(child.id, T)).toMatchObject({ spentMicros: 25_000 + 60_000, reservedMicros: 0, remainingMicros: 15_000 });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 25_000 + 60_000 + 5_000_000, reservedMicros: 0 });
  });

  it('job budgets: a top-up raises the sub-limit but never past what the tree has left', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const child = await newJob(s, { parentId: root.id, budgetMicros: 100_000 });
    const sibling = await newJob(s, { parentId: root.id, budgetMicros: 0 });
    const big = await s.reserveBudget(root.id, 700_000, T, undefined, sibling.id);
    expect(big?.ok).toBe(true);
    // tree left 300,000; child left 100,000 → at most 200,000 more
    expect(await s.topUpJobBudget(child.id, 200_001, T)).toEqual({ ok: false, maxAddMicros: 200_000 });
    expect(await s.getJobBudget(child.id, T)).toMatchObject({ limitMicros: 100_000 });
    expect(await s.topUpJobBudget(child.id, 150_000, T)).toEqual({ ok: true, budget: { rootId: root.id, jobId: child.id, limitMicros: 250_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 250_000 } });
    expect((await s.getJob(child.id))?.budgetMicros).toBe(250_000);
    expect(await s.topUpJobBudget(sibling.id, 1, T)).toBeNull();
    await expect(s.topUpJobBudget(child.id, 0, T)).rejects.toThrow(/addMicros/);
  });

  it('job budgets: a settle after the sweeper charged its reservation replaces that charge on the sub-limits of its job path (and the tree)', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 10_000_000 });
    const child = await newJob(s, { parentId: root.id, budgetMicros: 100_000 });
    const grandchild = await newJob(s, { parentId: child.id, budgetMicros: 0 });
    const r = await s.reserveBudget(root.id, 30_000, T, 1_000, grandchild.id);
    if (!r?.ok) throw new Error('the reservation must fit');
    await s.releaseExpiredReservations(T + 2_000);
    expect(await s.getJobBudget(child.id, T)).toMatchObject({ spentMicros: 30_000, reservedMicros: 0 });
    const late = {
      jobId: grandchild.id, attempt: 1, provider: 'scripted', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: false, httpStatus: 200,
      inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 25_000, startedAt: T, durationMs: 5,
    };
    expect(await s.settleBudget(root.id, r.reservationId, 25_000, T + 3_000, late)).toBe(false);
    expect(await s.getJobBudget(child.id, T)).toEqual({ rootId: root.id, jobId: child.id, limitMicros: 100_000, spentMicros: 25_000, reservedMicros: 0, remainingMicros: 75_000 });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 25_000, reservedMicros: 0 });
    expect(await s.jobUsage(grandchild.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 0, costMicros: 25_000 });
  });
}
