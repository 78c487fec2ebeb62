import { expect, it } from 'vitest';
import type { JobRow, NewModelCall, Store } from '../types.js';
import { T, fakeHash, newJob, type Harness } from './harness.js';

/** A ledger row of `jobId`'s attempt `attempt` costing `costMicros`. */
function call(jobId: number, attempt: number, costMicros: number): NewModelCall {
  return { jobId, attempt, provider: 'scripted', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros, startedAt: T, durationMs: 1 };
}

/** Claims job `id` on `runnerId` and starts its attempt (the one after `attempt - 1`). */
async function run(s: Store, id: number, runnerId: number, attempt: number): Promise<void> {
  expect(await s.claimJobById(id, { id: runnerId, labels: {} }, fakeHash('t'), T)).toMatchObject({ id, attempt });
  expect(await s.transitionJob(id, attempt, ['assigned'], 'running', T, { sessionId: `sess-${id}`, startedAt: T })).toMatchObject({ status: 'running' });
}

/** Reserves and settles `micros` for child `jobId` of tree `rootId` (it must fit). */
async function spend(s: Store, rootId: number, jobId: number, micros: number): Promise<void> {
  const r = await s.reserveBudget(rootId, micros, T, 60_000, jobId);
  if (!r?.ok) throw new Error(`spend ${micros}: refused`);
  await s.settleBudget(rootId, r.reservationId, micros, T);
}

/**
 * A $1.00 tree with two children sharing its budget, both running on one runner: a has spent
 * $0.90 and b, refused a call of up to $0.08, is paused (not yet resumed).
 */
async function siblings(s: Store): Promise<{ runnerId: number; root: JobRow; a: JobRow; b: JobRow }> {
  const runner = await s.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: fakeHash('c'), now: T });
  const root = await newJob(s, { budgetMicros: 1_000_000 });
  const a = await newJob(s, { parentId: root.id, budgetMicros: 0 });
  const b = await newJob(s, { parentId: root.id, budgetMicros: 0 });
  await run(s, a.id, runner.id, 1);
  await run(s, b.id, runner.id, 1);
  await spend(s, root.id, a.id, 900_000);
  expect(await s.pauseJobForBudget(b.id, 1, 'budget exhausted', T, 80_000)).toMatchObject({ status: 'paused' });
  return { runnerId: runner.id, root, a, b };
}

/**
 * The room a top-up gives a paused job is held for it against the other jobs of its tree
 * until its call is admitted (store/budget-holds.ts; fresh tester: a running sibling spent it,
 * and the resumed job paused again at its first call). µ$ figures worked out by hand.
 */
export function budgetHoldTests(h: Harness): void {
  it('budget holds: a resumed job holds its refused call\'s room against a running sibling until its call is admitted', async () => {
    const s = await h.open();
    // b's call of up to $0.08 did not fit: paused; then a top-up of $0.05 leaves $0.15, room for it
    const { runnerId, root, a, b } = await siblings(s);
    await s.topUpBudget(root.id, 50_000, T);
    expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([b.id]);
    expect((await s.resumeBudgetPausedJobs(root.id, T, [b.id])).map((j) => j.id)).toEqual([b.id]);
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_050_000, spentMicros: 900_000, reservedMicros: 0, heldMicros: 80_000, remainingMicros: 70_000 });

    // a: $0.10 would fit the $0.15 without the hold; with it $0.07 is left
    const other = await h.another(s);
    expect(await other.reserveBudget(root.id, 100_000, T, 60_000, a.id)).toEqual({ ok: false, budget: { rootId: root.id, limitMicros: 1_050_000, spentMicros: 900_000, reservedMicros: 0, heldMicros: 80_000, remainingMicros: 70_000 } });
    // a job that says it may hold (its row's pausedNeedMicros) but does not: the hold counts against it too
    expect(await other.reserveBudget(root.id, 70_001, T, 60_000, a.id, undefined, a.id)).toMatchObject({ ok: false, budget: { heldMicros: 80_000 } });
    // the root's own calls too (on SQLite the store's fast path: sqlite-budget-units.ts)
    expect(await other.reserveBudget(root.id, 70_001, T)).toMatchObject({ ok: false, budget: { heldMicros: 80_000, remainingMicros: 70_000 } });
    const atRoot = await other.reserveBudget(root.id, 30_000, T);
    expect(atRoot).toMatchObject({ ok: true, budget: { reservedMicros: 30_000, heldMicros: 80_000, remainingMicros: 40_000 } });
    if (!atRoot?.ok) throw new Error('unreachable');
    await other.settleBudget(root.id, atRoot.reservationId, 0, T);
    const fits = await other.reserveBudget(root.id, 70_000, T, 60_000, a.id);
    expect(fits).toMatchObject({ ok: true, budget: { reservedMicros: 70_000, heldMicros: 80_000, remainingMicros: 0 } });
    if (!fits?.ok) throw new Error('unreachable');
    await other.settleBudget(root.id, fits.reservationId, 0, T);

    // b resumes (attempt 2): its own hold does not keep it out — the whole $0.15 is its
    await run(s, b.id, runnerId, 2);
    const mine = await s.reserveBudget(root.id, 150_000, T, 60_000, b.id, undefined, b.id);
    expect(mine).toMatchObject({ ok: true, budget: { spentMicros: 900_000, reservedMicros: 150_000, remainingMicros: 0 } });
    if (!mine?.ok) throw new Error('unreachable');
    expect(mine.budget.heldMicros).toBeUndefined(); // its own hold is not shown to it
    // its call admitted: the reservation keeps the room from here (the rows hold nothing for b);
    // the resume rule counts b's need until the call is recorded
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_050_000, spentMicros: 900_000, reservedMicros: 150_000, remainingMicros: 0 });
    expect(await s.getJob(b.id)).toMatchObject({ pausedNeedMicros: 80_000 });
    expect((await other.reserveBudget(root.id, 1, T, 60_000, a.id))?.ok).toBe(false);
    // its call recorded at $0.03 and the hold ended: a has $0.12
    expect(await s.settleBudget(root.id, mine.reservationId, 30_000, T, call(b.id, 2, 30_000))).toBe(true);
    expect(await s.endBudgetResumeHold(b.id)).toBe(root.id);
    expect(await s.endBudgetResumeHold(b.id)).toBeNull();
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_050_000, spentMicros: 930_000, reservedMicros: 0, remainingMicros: 120_000 });
    expect(await other.reserveBudget(root.id, 120_000, T, 60_000, a.id)).toMatchObject({ ok: true });
  });

  it('budget holds: while a resumed job\'s call is in flight its room counts once (reserved), not also held', async () => {
    const s = await h.open();
    const other = await h.another(s);
    // b holds $0.08 of the $0.15 a $0.05 top-up left; resumed, it starts its attempt 2
    const { runnerId, root, a, b } = await siblings(s);
    await s.topUpBudget(root.id, 50_000, T);
    expect((await s.resumeBudgetPausedJobs(root.id, T, [b.id])).map((j) => j.id)).toEqual([b.id]);
    await run(s, b.id, runnerId, 2);
    // b's call of up to $0.03 admitted (its holder path: another instance, PostgreSQL's row lock)
    const mine = await other.reserveBudget(root.id, 30_000, T, 60_000, b.id, undefined, b.id);
    expect(mine).toMatchObject({ ok: true, budget: { reservedMicros: 30_000, remainingMicros: 120_000 } });
    if (!mine?.ok) throw new Error('unreachable');
    // $1.05 − $0.90 − $0.03 in flight = $0.12 for a; counting b's $0.08 again would leave $0.04
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_050_000, spentMicros: 900_000, reservedMicros: 30_000, remainingMicros: 120_000 });
    expect(await s.listBudgetHolders(root.id)).toEqual([]);
    const sibling = await s.reserveBudget(root.id, 120_000, T, 60_000, a.id);
    expect(sibling).toMatchObject({ ok: true, budget: { reservedMicros: 150_000, remainingMicros: 0 } });
    // b's call fails upstream (its reservation given back, nothing charged): b holds nothing now,
    // and its next call is reserved as any job's: a's $0.12 in flight leaves it $0.03
    await other.settleBudget(root.id, mine.reservationId, 0, T);
    expect(await other.reserveBudget(root.id, 30_001, T, 60_000, b.id, undefined, b.id)).toMatchObject({ ok: false, budget: { remainingMicros: 30_000 } });
    expect(await other.reserveBudget(root.id, 30_000, T, 60_000, b.id, undefined, b.id)).toMatchObject({ ok: true, budget: { remainingMicros: 0 } });
    // the resume rule (calls in flight not counted) still counts b's $0.08 until a call of b is
    // recorded: $1.05 − $0.90 − $0.08 = $0.07 for a paused job, not the $0.15 the rows would leave
    expect(await s.pauseJobForBudget(a.id, 1, 'budget exhausted', T, 70_001)).toMatchObject({ status: 'paused' });
    expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([]);
    expect(await s.setPausedNeed(a.id, 70_000)).toBe(true);
    expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([a.id]);
  });

  it('budget holds: the hold of a resumed job that has not started lapses once it was resumed at or before the given time; a started one\'s does not', async () => {
    const s = await h.open();
    const { runnerId, root, b } = await siblings(s);
    await s.topUpBudget(root.id, 50_000, T);
    // resumed at T + 10: b holds $0.08 of the $0.15
    expect((await s.resumeBudgetPausedJobs(root.id, T + 10, [b.id])).map((j) => j.id)).toEqual([b.id]);
    expect(await s.lapseBudgetHolds(root.id, T + 9)).toEqual([]);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ heldMicros: 80_000, remainingMicros: 70_000 });
    // queued since T + 10: lapses at T + 10; b stays queued, its need gone; a has the $0.15
    const other = await h.another(s);
    expect(await other.lapseBudgetHolds(root.id, T + 10)).toEqual([b.id]);
    expect(await s.getJob(b.id)).toMatchObject({ status: 'queued', pausedNeedMicros: null });
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_050_000, spentMicros: 900_000, reservedMicros: 0, remainingMicros: 150_000 });
    expect(await s.listBudgetHolders(root.id)).toEqual([]);
    expect(await s.lapseBudgetHolds(root.id, T + 10)).toEqual([]);
    // b starts later and calls as any job: nothing of its own held
    await run(s, b.id, runnerId, 2);
    expect(await s.reserveBudget(root.id, 150_001, T, 60_000, b.id, undefined, b.id)).toMatchObject({ ok: false, budget: { remainingMicros: 150_000 } });

    // a second tree: the resumed job started (running, no call yet) keeps its hold at any time
    const t2 = await siblings(s);
    await s.topUpBudget(t2.root.id, 50_000, T);
    await s.resumeBudgetPausedJobs(t2.root.id, T, [t2.b.id]);
    await run(s, t2.b.id, t2.runnerId, 2);
    expect(await s.lapseBudgetHolds(t2.root.id, T + 86_400_000)).toEqual([]);
    expect(await s.getTreeBudget(t2.root.id, T)).toMatchObject({ heldMicros: 80_000, remainingMicros: 70_000 });
    expect((await s.reserveBudget(t2.root.id, 70_001, T, 60_000, t2.a.id))?.ok).toBe(false);
  });

  it('budget holds: a resume and a running sibling\'s calls at the same time (two instances): the hold is written whole, and kept from the calls after it', async () => {
    for (let round = 0; round < 3; round++) {
      const s = await h.open();
      const other = await h.another(s);
      const { runnerId, root, a, b } = await siblings(s);
      // the server's order: top-up, the rule's reads, the resume; a's 20 calls of $0.01 race it
      const resume = (async () => {
        await s.topUpBudget(root.id, 100_000, T);
        const ids = await s.listResumableBudgetPausedJobs(root.id, 'tree');
        return (await s.resumeBudgetPausedJobs(root.id, T, ids)).map((j) => j.id);
      })();
      const calls = Array.from({ length: 20 }, () => other.reserveBudget(root.id, 10_000, T, 60_000, a.id));
      const [resumed, ...results] = await Promise.all([resume, ...calls]);
      const open = results.filter((r) => r?.ok) as { ok: true; reservationId: number }[];
      // a's calls in flight are not counted by the resume rule (they settle far lower, as a
      // rule: budget-resume.ts), so b resumes beside them; they never pass the $0.20 of room
      expect(resumed).toEqual([b.id]);
      expect(open.length * 10_000).toBeLessThanOrEqual(200_000);
      expect(await s.getTreeBudget(root.id, T)).toMatchObject({ limitMicros: 1_100_000, spentMicros: 900_000, reservedMicros: open.length * 10_000, heldMicros: 80_000 });
      // a's calls settle cheaply: what b holds stays b's, seen from either instance
      for (const r of open) await other.settleBudget(root.id, r.reservationId, 0, T);
      expect((await other.reserveBudget(root.id, 120_001, T, 60_000, a.id))?.ok).toBe(false);
      await run(s, b.id, runnerId, 2);
      expect(await other.reserveBudget(root.id, 200_000, T, 60_000, b.id, undefined, b.id)).toMatchObject({ ok: true });
    }
  });

  it('budget holds: a resume granted by the rule is checked again under the tree\'s lock: room spent meanwhile resumes nothing', async () => {
    const s = await h.open();
    const { root, a, b } = await siblings(s);
    await s.topUpBudget(root.id, 100_000, T);
    const ids = await s.listResumableBudgetPausedJobs(root.id, 'tree');
    expect(ids).toEqual([b.id]);
    // between the rule's reads and the resume, a spends $0.15 of the $0.20: $0.05 is left for b's $0.08
    await spend(s, root.id, a.id, 150_000);
    expect(await s.deferHeldBudgetResumes(root.id, ids)).toEqual([]);
    expect(await s.resumeBudgetPausedJobs(root.id, T, ids)).toEqual([]);
    expect(await s.getJob(b.id)).toMatchObject({ status: 'paused', endReason: 'budget' });
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_100_000, spentMicros: 1_050_000, reservedMicros: 0, remainingMicros: 50_000 });
  });

  it('budget holds: the periodic check (knownNeedOnly) leaves a job whose need is not known to a top-up', async () => {
    const s = await h.open();
    const { root, b } = await siblings(s);
    const runner = await s.createRunner({ name: 'r2', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: T });
    const c = await newJob(s, { parentId: root.id, budgetMicros: 0 });
    await run(s, c.id, runner.id, 1);
    // c paused with no need named: 1 µ$ counts for it; the $0.10 left fits b's $0.08 and that 1 µ$
    expect(await s.pauseJobForBudget(c.id, 1, 'tree out of budget', T)).toMatchObject({ status: 'paused', pausedNeedMicros: null });
    expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([b.id, c.id]);
    // the periodic check resumes b, whose need is known, and leaves c to a top-up
    expect(await s.listResumableBudgetPausedJobs(root.id, 'tree', true)).toEqual([b.id]);
  });

  it('budget holds: the trees waiting for budget are listed in root order, from after a given root (the sweep goes through them all)', async () => {
    const s = await h.open();
    const roots: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { root } = await siblings(s); // each: a child paused for budget
      roots.push(root.id);
    }
    expect(await s.listBudgetWaitingTrees(2)).toEqual(roots.slice(0, 2));
    expect(await s.listBudgetWaitingTrees(2, roots[1])).toEqual([roots[2]]);
    expect(await s.listBudgetWaitingTrees(10, roots[2])).toEqual([]);
  });

  it('budget holds: a hold whose job ended before its call is given back at the next refusal, and by a sync', async () => {
    const s = await h.open();
    const runner = await s.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: fakeHash('c'), now: T });
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const a = await newJob(s, { parentId: root.id, budgetMicros: 0 });
    const b = await newJob(s, { parentId: root.id, budgetMicros: 0 });
    const c = await newJob(s, { parentId: root.id, budgetMicros: 0 });
    await run(s, a.id, runner.id, 1);
    await run(s, b.id, runner.id, 1);
    await run(s, c.id, runner.id, 1);
    await spend(s, root.id, a.id, 950_000);
    expect(await s.pauseJobForBudget(b.id, 1, 'budget exhausted', T, 40_000)).toMatchObject({ status: 'paused' });
    expect(await s.pauseJobForBudget(c.id, 1, 'budget exhausted', T, 30_000)).toMatchObject({ status: 'paused' });
    await s.topUpBudget(root.id, 100_000, T);
    expect(await s.resumeBudgetPausedJobs(root.id, T, [b.id, c.id])).toHaveLength(2);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ heldMicros: 70_000, remainingMicros: 80_000 });
    // b cancelled while queued: nothing wrote its hold away yet
    expect(await s.transitionJob(b.id, null, ['queued'], 'cancelled', T)).toMatchObject({ status: 'cancelled' });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ heldMicros: 70_000 });
    // a's $0.10 is refused against the stale $0.07 held: the store writes the holds again (c's
    // $0.03 alone) and the call fits $0.15 − $0.03 = $0.12
    expect(await s.reserveBudget(root.id, 100_000, T, 60_000, a.id)).toMatchObject({ ok: true, budget: { spentMicros: 950_000, reservedMicros: 100_000, heldMicros: 30_000, remainingMicros: 20_000 } });
    // a refusal after the sync names the real hold
    expect(await s.reserveBudget(root.id, 20_001, T, 60_000, a.id)).toEqual({ ok: false, budget: { rootId: root.id, limitMicros: 1_100_000, spentMicros: 950_000, reservedMicros: 100_000, heldMicros: 30_000, remainingMicros: 20_000 } });
    // c starts, and fails before its call: a sync (the server's, when a job ends) gives its room back
    await run(s, c.id, runner.id, 2);
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ heldMicros: 30_000 });
    expect(await s.transitionJob(c.id, 2, ['running'], 'failed', T)).toMatchObject({ status: 'failed' });
    await s.syncBudgetHolds(root.id);
    expect(await s.getTreeBudget(root.id, T)).toEqual({ rootId: root.id, limitMicros: 1_100_000, spentMicros: 950_000, reservedMicros: 100_000, remainingMicros: 50_000 });
  });

  it('budget holds: a resumed child holds room on its own sub-limit against the jobs that share it', async () => {
    const s = await h.open();
    const runner = await s.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: fakeHash('c'), now: T });
    const root = await newJob(s, { budgetMicros: 1_000_000 });
    const b = await newJob(s, { parentId: root.id, budgetMicros: 100_000 });
    const c = await newJob(s, { parentId: b.id, budgetMicros: 0 }); // spends from b's sub-limit
    await run(s, b.id, runner.id, 1);
    await run(s, c.id, runner.id, 1);
    await spend(s, root.id, b.id, 95_000);
    expect(await s.pauseJobForBudget(b.id, 1, 'budget exhausted', T, 20_000)).toMatchObject({ status: 'paused' });
    expect(await s.topUpJobBudget(b.id, 30_000, T)).toMatchObject({ ok: true });
    expect(await s.listResumableBudgetPausedJobs(root.id, { jobId: b.id })).toEqual([b.id]);
    await s.resumeBudgetPausedJobs(root.id, T, [b.id]);
    // b's sub-limit: $0.13 − $0.095 spent − $0.02 held = $0.015; the tree holds the $0.02 too
    expect(await s.getJobBudget(b.id, T)).toEqual({ rootId: root.id, jobId: b.id, limitMicros: 130_000, spentMicros: 95_000, reservedMicros: 0, heldMicros: 20_000, remainingMicros: 15_000 });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ spentMicros: 95_000, heldMicros: 20_000, remainingMicros: 885_000 });
    expect(await s.reserveBudget(root.id, 20_000, T, 60_000, c.id)).toEqual({ ok: false, budget: { rootId: root.id, jobId: b.id, limitMicros: 130_000, spentMicros: 95_000, reservedMicros: 0, heldMicros: 20_000, remainingMicros: 15_000 } });
    expect(await s.reserveBudget(root.id, 15_000, T, 60_000, c.id)).toMatchObject({ ok: true });
    // b itself: its hold is its own on both budgets ($0.035 − $0.015 reserved by c = $0.02)
    await run(s, b.id, runner.id, 2);
    expect(await s.reserveBudget(root.id, 20_001, T, 60_000, b.id, undefined, b.id)).toMatchObject({ ok: false, budget: { jobId: b.id, remainingMicros: 20_000 } });
    const mine = await s.reserveBudget(root.id, 10_000, T, 60_000, b.id, undefined, b.id);
    expect(mine).toMatchObject({ ok: true });
    // admitted: the hold ended on both budgets, b's $0.01 in flight counted once — c has
    // $0.13 − $0.095 − $0.015 − $0.01 = $0.01 on b's sub-limit (with the hold again: none)
    expect(await s.getJobBudget(b.id, T)).toEqual({ rootId: root.id, jobId: b.id, limitMicros: 130_000, spentMicros: 95_000, reservedMicros: 25_000, remainingMicros: 10_000 });
    expect(await s.getTreeBudget(root.id, T)).toMatchObject({ reservedMicros: 25_000, remainingMicros: 880_000 });
    expect(await s.reserveBudget(root.id, 10_000, T, 60_000, c.id)).toMatchObject({ ok: true });
  });
}
