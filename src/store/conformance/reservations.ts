import { expect, it } from 'vitest';
import type { NewModelCall, PendingCall } from '../types.js';
import { T, newJob, type Harness } from './harness.js';

const MIN = 60_000;

function call(jobId: number, costMicros: number): NewModelCall {
  return {
    jobId,
    attempt: 1,
    provider: 'scripted',
    model: 'claude-sonnet-4-5',
    api: 'anthropic-messages',
    streamed: false,
    httpStatus: 200,
    inputTokens: 10,
    outputTokens: 20,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    usageKnown: true,
    costMicros,
    startedAt: T,
    durationMs: 5,
  };
}

/**
 * Budget reservations held as rows (store/budgets.ts, migration 0008), charged by the sweep when
 * never settled (H7: store/expired-reservations.ts, migration 0020), and model routes/prices
 * (store/model-routes.ts).
 */
export function reservationTests(h: Harness): void {
  it('reservations (H7): a reservation whose gateway died is charged its worst case after its expiry, with a ledger row of unknown usage for its call', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    // The "dead gateway": reserves 700,000 µ$ (expiry in 10 min) for a call and never settles.
    const pending: PendingCall = { jobId: root.id, attempt: 1, provider: 'anthropic', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: true, runnerId: null, inputTokens: 1_000, outputTokens: 46_000, webSearchRequests: 2 };
    const dead = await s.reserveBudget(root.id, 700_000, T, 10 * MIN, undefined, pending);
    expect(dead?.ok).toBe(true);
    // A live gateway's call (expiry 30 min) settles normally at 50,000 µ$.
    const live = await s.reserveBudget(root.id, 200_000, T + 1, 30 * MIN);
    if (!live?.ok) throw new Error('must fit');
    // 700,000 + 200,000 reserved: 100,001 does not fit now.
    expect((await s.reserveBudget(root.id, 100_001, T + 2))?.ok).toBe(false);
    // Before the expiry nothing is swept.
    expect(await s.releaseExpiredReservations(T + 10 * MIN - 1)).toEqual([]);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ reservedMicros: 900_000, remainingMicros: 100_000 });
    // At the expiry the dead one is charged (not given back for free); the live one stays.
    expect(await s.releaseExpiredReservations(T + 10 * MIN)).toEqual([{ rootId: root.id, releasedMicros: 700_000, chargedMicros: 700_000, count: 1 }]);
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_000_000, spentMicros: 700_000, reservedMicros: 200_000, remainingMicros: 100_000 });
    // Its ledger row: the job's, usage unknown, the worst case's tokens, the charge.
    expect(await s.jobUsage(root.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 1, costMicros: 700_000, inputTokens: 1_000, outputTokens: 46_000 });
    expect(await s.releaseExpiredReservations(T + 10 * MIN)).toEqual([]); // once only
    // The live call settles with its ledger row in the same transaction.
    expect(await s.settleBudget(root.id, live.reservationId, 50_000, T + 3, call(root.id, 50_000))).toBe(true);
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_000_000, spentMicros: 750_000, reservedMicros: 0, remainingMicros: 250_000 });
    expect(await s.jobUsage(root.id)).toMatchObject({ modelCalls: 2, estimatedCalls: 1, costMicros: 750_000 });
    expect((await s.reserveBudget(root.id, 250_000, T + 4))?.ok).toBe(true);
  });

  it('reservations (H7): a reservation from before the call was kept is charged on the root job, model unknown; two sweepers charge it once', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    expect((await s.reserveBudget(root.id, 300_000, T, MIN))?.ok).toBe(true);
    const [a, b] = await Promise.all([s.releaseExpiredReservations(T + MIN), s2.releaseExpiredReservations(T + MIN)]);
    expect([...a, ...b]).toEqual([{ rootId: root.id, releasedMicros: 300_000, chargedMicros: 300_000, count: 1 }]);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 300_000, reservedMicros: 0 });
    expect(await s.costRollup({ by: 'job', since: 0 })).toEqual([{ key: String(root.id), calls: 1, refusedCalls: 0, estimatedCalls: 1, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 300_000, costNanos: 300_000_000 }]);
  });

  it('reservations: a live call moves its expiry on; the sweep then keeps it until the new expiry; a swept one cannot be extended', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const r = await s.reserveBudget(root.id, 400_000, T, MIN);
    if (!r?.ok) throw new Error('must fit');
    expect(await s.extendBudgetReservation(r.reservationId, T + 3 * MIN)).toBe(true);
    expect(await s.releaseExpiredReservations(T + MIN)).toEqual([]); // its first expiry: kept
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ reservedMicros: 400_000 });
    expect(await s.releaseExpiredReservations(T + 3 * MIN)).toEqual([{ rootId: root.id, releasedMicros: 400_000, chargedMicros: 400_000, count: 1 }]);
    expect(await s.extendBudgetReservation(r.reservationId, T + 9 * MIN)).toBe(false); // swept
    expect(await s.extendBudgetReservation(2_000_000_000, T)).toBe(false);
  });

  it('reservations (H7): a late settle of a swept reservation replaces the sweep\'s charge and ledger row with its own: the call counts once, at its real cost', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const pending: PendingCall = { jobId: root.id, attempt: 1, provider: 'anthropic', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: false, inputTokens: 100, outputTokens: 19_000 };
    const a = await s.reserveBudget(root.id, 300_000, T, MIN, undefined, pending);
    const b = await s.reserveBudget(root.id, 100_000, T, 5 * MIN);
    if (!a?.ok || !b?.ok) throw new Error('must fit');
    expect(await s.releaseExpiredReservations(T + MIN)).toEqual([{ rootId: root.id, releasedMicros: 300_000, chargedMicros: 300_000, count: 1 }]);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 300_000, reservedMicros: 100_000 });
    // The slow call comes back after all: the sweep's 300,000 are taken back, 20,000 charged; reserved is not reduced a second time.
    expect(await s.settleBudget(root.id, a.reservationId, 20_000, T + MIN + 1, call(root.id, 20_000))).toBe(false);
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_000_000, spentMicros: 20_000, reservedMicros: 100_000, remainingMicros: 880_000 });
    expect(await s.jobUsage(root.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 0, costMicros: 20_000, inputTokens: 10, outputTokens: 20 });
    // A second settle finds nothing: it charges its cost (as before H7) and gives nothing back.
    expect(await s.settleBudget(root.id, a.reservationId, 1, T + MIN + 2)).toBe(false);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 20_001, reservedMicros: 100_000 });
  });

  it('reservations (H7): the marker of a swept reservation is dropped after a day; a settle after that charges on top of the sweep', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const a = await s.reserveBudget(root.id, 300_000, T, MIN);
    if (!a?.ok) throw new Error('must fit');
    await s.releaseExpiredReservations(T + MIN);
    expect(await s.releaseExpiredReservations(T + MIN + 24 * 60 * MIN)).toEqual([]); // drops the marker, sweeps nothing
    expect(await s.settleBudget(root.id, a.reservationId, 20_000, T + 2 * 24 * 60 * MIN)).toBe(false);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 320_000, reservedMicros: 0 });
  });

  it('reservations: a bad ledger row in settle writes nothing (reservation still held)', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const r = await s.reserveBudget(root.id, 300_000, T);
    if (!r?.ok) throw new Error('must fit');
    await expect(s.settleBudget(root.id, r.reservationId, 10, T, { ...call(root.id, 10), inputTokens: -1 })).rejects.toThrow(/inputTokens/);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 0, reservedMicros: 300_000 });
    expect(await s.settleBudget(root.id, r.reservationId, 10, T)).toBe(true);
    await expect(s.reserveBudget(root.id, 1, T, 0)).rejects.toThrow(/ttlMs/);
  });

  it('model routes and prices: set (upsert), list, delete; bad input names the field', async () => {
    const s = await h.open();
    expect(await s.listModelRoutes()).toEqual([]);
    expect(await s.setModelRoute('claude-*', 'anthropic', T)).toEqual({ pattern: 'claude-*', provider: 'anthropic', updatedAt: T });
    await s.setModelRoute('*', 'scripted', T + 1);
    await s.setModelRoute('claude-*', 'scripted', T + 2); // replaces
    expect(await s.listModelRoutes()).toEqual([
      { pattern: '*', provider: 'scripted', updatedAt: T + 1 },
      { pattern: 'claude-*', provider: 'scripted', updatedAt: T + 2 },
    ]);
    await expect(s.setModelRoute('gpt 4', 'openai', T)).rejects.toThrow(/pattern/);
    await expect(s.setModelRoute('gpt-*', 'bedrock', T)).rejects.toThrow(/provider must be one of/);
    expect(await s.deleteModelRoute('claude-*')).toBe(true);
    expect(await s.deleteModelRoute('claude-*')).toBe(false);
    expect((await s.listModelRoutes()).map((r) => r.pattern)).toEqual(['*']);

    const price = { input: 1.5, output: 7.25, cacheWrite5m: 1.875, cacheWrite1h: 3, cacheRead: 0.15 };
    expect(await s.setModelPrice('my-model', price, T)).toEqual({ model: 'my-model', price, updatedAt: T });
    await s.setModelPrice('my-model', { ...price, output: 8 }, T + 1);
    expect(await s.listModelPrices()).toEqual([{ model: 'my-model', price: { ...price, output: 8 }, updatedAt: T + 1 }]);
    await expect(s.setModelPrice('x', { ...price, cacheRead: -1 }, T)).rejects.toThrow(/price\.cacheRead/);
    await expect(s.setModelPrice('x-*', price, T)).rejects.toThrow(/without \*/);
    expect(await s.deleteModelPrice('my-model')).toBe(true);
    expect(await s.listModelPrices()).toEqual([]);
  });
}
