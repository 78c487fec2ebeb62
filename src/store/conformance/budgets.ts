import { expect, it } from 'vitest';
import type { NewModelCall } from '../types.js';
import { BudgetCapError } from '../budgets.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

function call(jobId: number, over: Partial<NewModelCall>): NewModelCall {
  return {
    jobId,
    attempt: 1,
    provider: 'scripted',
    model: 'claude-sonnet-4-5',
    api: 'anthropic-messages',
    streamed: true,
    httpStatus: 200,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    usageKnown: true,
    costMicros: 0,
    startedAt: T,
    durationMs: 10,
    ...over,
  };
}

/** Budgets per job tree (store/budgets.ts) and the cost rollups (store/costs.ts). */
export function budgetTests(h: Harness): void {
  it('budgets: created from the root job, reserve is all-or-nothing, settle charges the real cost', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const child = await newJob(s, { parentId: root.id });
    expect(await s.getTreeBudget(child.id, T)).toBeNull(); // not a root
    expect(await s.reserveBudget(999, 1, T)).toBeNull();
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 1_000_000 });
    const r1 = await s.reserveBudget(root.id, 600_000, T);
    expect(r1).toEqual({ ok: true, budget: { rootId: root.id, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 600_000, remainingMicros: 400_000 }, reservationId: expect.any(Number) });
    // 600,000 + 400,001 > 1,000,000: refused, nothing changes
    expect(await s.reserveBudget(root.id, 400_001, T)).toEqual({ ok: false, budget: { rootId: root.id, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 600_000, remainingMicros: 400_000 } });
    const r2 = await s.reserveBudget(root.id, 400_000, T); // exactly to the limit fits
    if (!r1?.ok || !r2?.ok) throw new Error('both reservations must fit');
    expect(r2.reservationId).not.toBe(r1.reservationId);
    expect(await s.settleBudget(root.id, r1.reservationId, 123_456, T)).toBe(true);
    expect(await s.settleBudget(root.id, r2.reservationId, 0, T)).toBe(true); // a failed call releases
    expect(await s.settleBudget(root.id, r2.reservationId, 0, T)).toBe(false); // once only
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 123_456, reservedMicros: 0, remainingMicros: 876_544 });
    await expect(s.reserveBudget(root.id, 1.5, T)).rejects.toThrow(/worstMicros/);
    await expect(s.topUpBudget(root.id, 0, T)).rejects.toThrow(/addMicros/);
  });

  it('budgets: a lazily created row and a top-up; the root job shows the new limit', async () => {
    const s = await h.open();
    const root = await newJob(s, { budgetMicros: 500_000 });
    const b = await s.topUpBudget(root.id, 2_000_000, T);
    expect(b).toEqual({ rootId: root.id, limitMicros: 2_500_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 2_500_000 });
    expect((await s.getJob(root.id))?.budgetMicros).toBe(2_500_000);
    expect(await s.topUpBudget(12345, 1, T)).toBeNull();
  });

  it('budgets: a top-up with a cap: up to the cap it is taken; past it BudgetCapError with the limit; at once from two stores only one fits', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    expect(await s.topUpBudget(root.id, 1_000_000, T, 2_000_000)).toMatchObject({ limitMicros: 2_000_000 });
    const over = await s.topUpBudget(root.id, 1, T, 2_000_000).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(BudgetCapError);
    expect(over).toMatchObject({ limitMicros: 2_000_000, capMicros: 2_000_000 });
    // Two of 600,000 against a cap of 3,000,000 (room for one): one is taken, one refused.
    const both = await Promise.allSettled([s.topUpBudget(root.id, 600_000, T, 3_000_000), s2.topUpBudget(root.id, 600_000, T, 3_000_000)]);
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((await s.getTreeBudget(root.id, T))?.limitMicros).toBe(2_600_000);
    expect((await s.getJob(root.id))?.budgetMicros).toBe(2_600_000);
  });

  it('budgets: 20 concurrent reservations of 40,000 µ$ with 100,000 left: exactly 2 succeed (two store instances)', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const first = await s.reserveBudget(root.id, 900_000, T);
    if (!first?.ok) throw new Error('the first reservation must fit');
    await s.settleBudget(root.id, first.reservationId, 900_000, T);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? s2 : s).reserveBudget(root.id, 40_000, T)));
    expect(results.filter((r) => r?.ok).length).toBe(2);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 900_000, reservedMicros: 80_000, remainingMicros: 20_000 });
  });

  it('budgets: the first calls of a new tree, concurrent from two instances, all fit while one of them creates the row (none refused)', async () => {
    // CI failure 2026-11-30: a reservation whose UPDATE ran before a concurrent call created the
    // tree's row read the row afterwards and answered "does not fit" with $9.91 left.
    for (let round = 0; round < 5; round++) {
      const s = await h.open();
      const s2 = await h.another(s);
      const root = await newJob(s, { budgetMicros: 10_000_000 });
      const child = await newJob(s, { parentId: root.id, budgetMicros: 1_000_000 });
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? s2 : s).reserveBudget(root.id, 30_000, T, undefined, i % 4 < 2 ? child.id : undefined)));
      expect(results.map((r) => r?.ok)).toEqual(Array.from({ length: 16 }, () => true));
      expect(await s.getTreeBudget(root.id, T)).toMatchObject({ reservedMicros: 16 * 30_000, remainingMicros: 10_000_000 - 16 * 30_000 });
      expect(await s.getJobBudget(child.id, T)).toMatchObject({ reservedMicros: 8 * 30_000 });
    }
  });

  it('budgets: pause fenced by attempt kills the token; top-up resume requeues with the session to resume', async () => {
    const s = await h.open();
    const runner = await newRunner(s);
    const root = await newJob(s);
    const tok = fakeHash('t');
    const claimed = await s.claimJob({ id: runner.id, labels: {} }, tok, T);
    expect(claimed?.id).toBe(root.id);
    await s.transitionJob(root.id, 1, ['assigned'], 'running', T, { sessionId: 'sess-1', startedAt: T });
    expect(await s.pauseJobForBudget(root.id, 2, 'x', T)).toBeNull(); // wrong attempt
    const paused = await s.pauseJobForBudget(root.id, 1, 'tree out of budget', T + 1);
    expect(paused).toMatchObject({ status: 'paused', endReason: 'budget', error: 'tree out of budget', sessionId: 'sess-1' });
    expect(await s.findJobByTokenHash(tok)).toBeNull();
    // ...but the gateway still finds it as paused for budget (it answers the budget refusal)
    expect(await s.findPausedJobByTokenHash(tok)).toMatchObject({ id: root.id, status: 'paused', endReason: 'budget' });
    expect(await s.findPausedJobByTokenHash(fakeHash('other'))).toBeNull();
    const resumed = await s.resumeBudgetPausedJobs(root.id, T + 2);
    expect(resumed.map((j) => [j.id, j.status, j.resumeSessionId, j.endReason, j.error, j.pinnedRunnerId, j.runnerId])).toEqual([[root.id, 'queued', 'sess-1', null, null, runner.id, null]]);
    // pinned: another runner does not get it
    const other = await newRunner(s, {}, 'other');
    expect(await s.claimJob({ id: other.id, labels: {} }, fakeHash('t'), T + 3)).toBeNull();
    expect(await s.resumeBudgetPausedJobs(root.id, T + 3)).toEqual([]);
    expect(await s.findPausedJobByTokenHash(tok)).toBeNull(); // resumed: the old token is dead for good
    const again = await s.claimJob({ id: runner.id, labels: {} }, fakeHash('t'), T + 4);
    expect(again).toMatchObject({ id: root.id, attempt: 2, resumeSessionId: 'sess-1', status: 'assigned' });
  });

  it('costs: rows of equal cost keyed by id come in id order (9 before 10), not as text', async () => {
    const s = await h.open();
    const jobs = [];
    for (let i = 0; i < 11; i++) jobs.push(await newJob(s, { agent: 'test-fixer' }));
    for (const j of [...jobs].reverse()) await s.recordModelCall(call(j.id, { costMicros: 5, startedAt: T }));
    const ids = jobs.map((j) => j.id).sort((a, b) => a - b);
    expect(ids.some((id) => id >= 10)).toBe(true);
    expect((await s.costRollup({ by: 'job', since: T - 1 })).map((r) => r.key)).toEqual(ids.map(String));
  });

  it('costs: a nano-dollar sum past 2^53 − 1 (~$9.007M) is left out, never rounded; the µ$ sum stays exact', async () => {
    const s = await h.open();
    const job = await newJob(s, { agent: 'big-spender' });
    // $5M and $5M + 1 n$ (odd): their sum, 10,000,000,000,000,001 n$, is past what a double holds exactly
    await s.recordModelCall(call(job.id, { costMicros: 5_000_000_000_000, costNanos: 5_000_000_000_000_000, startedAt: T }));
    await s.recordModelCall(call(job.id, { costMicros: 5_000_000_000_000, costNanos: 5_000_000_000_000_001, startedAt: T + 1 }));
    const [row] = await s.costRollup({ by: 'agent', since: T - 1, rootId: job.id });
    expect(row).toMatchObject({ key: 'big-spender', calls: 2, costMicros: 10_000_000_000_000 });
    expect(row).not.toHaveProperty('costNanos');
    // one of them alone is still exact
    const [first] = await s.costRollup({ by: 'agent', since: T - 1, until: T + 1, rootId: job.id });
    expect(first).toMatchObject({ costMicros: 5_000_000_000_000, costNanos: 5_000_000_000_000_000 });
  });

  it('costs: rollups per job, tree, agent, runner, UTC day and task, within [since, until)', async () => {
    const s = await h.open();
    const runner = await newRunner(s);
    const root = await newJob(s, { agent: 'test-fixer' });
    const child = await newJob(s, { parentId: root.id, agent: 'reviewer' });
    const other = await newJob(s, { agent: 'reviewer' });
    const DAY = 86_400_000;
    const day0 = Math.floor(T / DAY) * DAY; // 2027-01-15T00:00Z
    await s.recordModelCall(call(root.id, { inputTokens: 10, outputTokens: 1, costMicros: 100, costNanos: 99_600, runnerId: runner.id, startedAt: day0 + 1000 }));
    await s.recordModelCall(call(child.id, { inputTokens: 20, outputTokens: 2, costMicros: 200, runnerId: runner.id, startedAt: day0 + DAY + 5 }));
    await s.recordModelCall(call(other.id, { inputTokens: 40, costMicros: 400, startedAt: day0 + DAY + 6, usageKnown: false }));
    await s.recordModelCall(call(other.id, { costMicros: 0, startedAt: day0 + DAY + 7, refused: 'budget', httpStatus: 402 }));
    await s.recordModelCall(call(other.id, { inputTokens: 1, costMicros: 700, startedAt: day0 - 1 })); // before `since`; the dearest day
    const since = day0;
    const byAgent = await s.costRollup({ by: 'agent', since });
    expect(byAgent.map((r) => [r.key, r.calls, r.costMicros, r.inputTokens])).toEqual([
      ['reviewer', 3, 600, 60],
      ['test-fixer', 1, 100, 10],
    ]);
    expect(byAgent[0]).toMatchObject({ refusedCalls: 1, estimatedCalls: 1, costNanos: 600_000 });
    expect(byAgent[1]).toMatchObject({ costNanos: 99_600 });
    const byTree = await s.costRollup({ by: 'tree', since });
    expect(byTree.map((r) => [r.key, r.costMicros])).toEqual([[String(other.id), 400], [String(root.id), 300]]);
    const byRunner = await s.costRollup({ by: 'runner', since });
    expect(byRunner.map((r) => [r.key, r.costMicros])).toEqual([['none', 400], [String(runner.id), 300]]);
    // days newest first, whatever they cost (the 14th cost most)
    const byDay = await s.costRollup({ by: 'day', since: day0 - DAY });
    expect(byDay.map((r) => [r.key, r.calls, r.costMicros])).toEqual([
      ['2027-01-16', 3, 600],
      ['2027-01-15', 1, 100],
      ['2027-01-14', 1, 700],
    ]);
    const byJob = await s.costRollup({ by: 'job', since, until: day0 + DAY });
    expect(byJob.map((r) => [r.key, r.costMicros])).toEqual([[String(root.id), 100]]);
    expect((await s.costRollup({ by: 'job', since, rootId: root.id })).map((r) => r.key).sort()).toEqual([String(root.id), String(child.id)].sort());
    // by task: root's tree (root and its child) runs turn 1 of a task; `other` is no task's turn
    const task = await s.createTask({ agent: 'test-fixer', title: '', input: {}, keys: [], coalesceMs: 0, now: T });
    await s.enqueueTaskPrompt(task.id, 'go', T);
    const turn = await s.claimTaskTurn(task.id, T);
    expect(await s.attachTurnJob(task.id, turn!.turn, root.id, T)).toBe(true);
    const byTask = await s.costRollup({ by: 'task', since });
    expect(byTask.map((r) => [r.key, r.calls, r.costMicros])).toEqual([
      ['none', 2, 400],
      [String(task.id), 2, 300],
    ]);
  });
}
