// The one rule for resuming budget-paused jobs (budget-resume.ts): the pure rule, the refused
// call's amount read from the pause reason, and the store's reads on a real SQLite store —
// including a resume deferred until the paused attempt's exit that finds the room spent by then.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mayResumeForBudget, refusedCallMicros } from './budget-resume.js';
import { openSqliteStore } from './sqlite.js';
import type { Store } from './types.js';

const T = 1_800_000_000_000;
const dir = mkdtempSync(join(tmpdir(), 'flotilla-budget-resume-'));
const opened: Store[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the resume rule', () => {
  it('reads the refused call from the gateway message, else nothing', () => {
    const msg = "budget exhausted: job 6's budget (sub-limit in job tree 5) is $0.030000, $0.020400 spent and $0.000000 reserved by calls in flight, $0.009600 left; this call may cost up to $0.010100. Top up with: flotilla budget 6 --add <USD>";
    expect(refusedCallMicros(msg)).toBe(10_100);
    expect(refusedCallMicros('budget exhausted: ... this call may cost up to $12.000001. Top up')).toBe(12_000_001);
    expect(refusedCallMicros('tree out of budget')).toBeNull();
    expect(refusedCallMicros(null)).toBeNull();
  });

  it('needs the raised budget on the path and room for the call on every budget of it', () => {
    const tree = { limitMicros: 1_000_000, spentMicros: 0 };
    const six = { jobId: 6, limitMicros: 30_000, spentMicros: 20_400 }; // $0.0096 left
    expect(mayResumeForBudget(true, [tree, six], 10_100)).toBe(false);
    expect(mayResumeForBudget(true, [tree, { ...six, limitMicros: 30_499 }], 10_100)).toBe(false); // 1 µ$ short
    expect(mayResumeForBudget(true, [tree, { ...six, limitMicros: 30_500 }], 10_100)).toBe(true);
    expect(mayResumeForBudget(false, [tree, { ...six, limitMicros: 40_000 }], 10_100)).toBe(false); // not its budget
    // the amount unknown: any room at all (1 µ$)
    expect(mayResumeForBudget(true, [tree, six], null)).toBe(true);
    expect(mayResumeForBudget(true, [{ limitMicros: 50, spentMicros: 50 }], null)).toBe(false);
  });
});

describe('on SQLite', () => {
  it('lists only the paused jobs the raised budget gives room; a deferred resume rechecks at exit', async () => {
    const s = await openSqliteStore(join(dir, 'db.sqlite'));
    opened.push(s);
    const runner = await s.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: 'c'.padEnd(64, '0'), now: T });
    const job = (parentId: number | null, budgetMicros: number) => s.createJob({ parentId, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros, now: T });
    const root = await job(null, 100_000);
    const six = await job(root.id, 30_000);
    const seven = await job(root.id, 10_000);
    const eight = await job(seven.id, 0); // shares 7's sub-limit
    let k = 0;
    const pause = async (id: number, need: number | null) => {
      await s.claimJobById(id, { id: runner.id, labels: {} }, `t${++k}`.padEnd(64, '0'), T);
      await s.transitionJob(id, 1, ['assigned'], 'running', T, { sessionId: `sess-${id}`, startedAt: T });
      const why = need === null ? 'tree out of budget' : `budget exhausted: ...; this call may cost up to $0.${String(need).padStart(6, '0')}. Top up with: ...`;
      expect(await s.pauseJobForBudget(id, 1, why, T + 1)).toMatchObject({ status: 'paused' });
    };
    const spend = async (id: number, micros: number) => {
      const r = await s.reserveBudget(root.id, micros, T, 60_000, id);
      if (!r?.ok) throw new Error('no fit');
      await s.settleBudget(root.id, r.reservationId, micros, T);
    };
    await spend(six.id, 20_400);
    await spend(seven.id, 10_000);
    await pause(six.id, 10_100);
    await pause(seven.id, 2_000);
    await pause(eight.id, null);

    // 7's sub-limit raised (by hand: +$0.01): 7 and 8 (its path holds 7's sub-limit), never 6
    expect(await s.topUpJobBudget(seven.id, 10_000, T + 2)).toMatchObject({ ok: true });
    expect(await s.listResumableBudgetPausedJobs(root.id, { jobId: seven.id })).toEqual([seven.id, eight.id]);
    // the tree raised: 7 and 8 have room, 6's own sub-limit has $0.0096 for a $0.0101 call
    expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([seven.id, eight.id]);
    expect(await s.listResumableBudgetPausedJobs(root.id, { jobId: six.id })).toEqual([]);
    expect(await s.topUpJobBudget(six.id, 500, T + 3)).toMatchObject({ ok: true });
    expect(await s.listResumableBudgetPausedJobs(root.id, { jobId: six.id })).toEqual([six.id]);

    // 7 still held by its runner: deferred; the room of its $0.002 call is held for it (budget-holds.ts)
    expect((await s.deferHeldBudgetResumes(root.id, [seven.id])).map((j) => [j.id, j.endReason])).toEqual([[seven.id, 'budget_resume']]);
    expect(await s.resumeBudgetPausedJobs(root.id, T + 4, [])).toEqual([]);
    expect(await s.getJobBudget(seven.id, T)).toMatchObject({ limitMicros: 20_000, spentMicros: 10_000, heldMicros: 2_000, remainingMicros: 8_000 });
    // so 8 (sharing 7's sub-limit) cannot take it: $0.009 would leave $0.001
    expect(await s.reserveBudget(root.id, 9_000, T, 60_000, eight.id)).toMatchObject({ ok: false, budget: { jobId: seven.id, heldMicros: 2_000, remainingMicros: 8_000 } });
    // a call that fits beside the hold but costs more than its worst case spends it all the same: stays paused at its exit
    const r = await s.reserveBudget(root.id, 8_000, T, 60_000, eight.id);
    if (!r?.ok) throw new Error('no fit');
    await s.settleBudget(root.id, r.reservationId, 9_000, T); // 7's sub-limit: $0.02 - $0.019 = $0.001 left, its call needs $0.002
    expect(await s.endPausedAttempt(seven.id, 1, T + 5)).toMatchObject({ status: 'paused', endReason: 'budget', finishedAt: T + 5 });
    expect((await s.getJobBudget(seven.id, T))?.heldMicros).toBeUndefined();
    // 6, deferred with room kept: queued at its exit
    await s.deferHeldBudgetResumes(root.id, [six.id]);
    expect(await s.endPausedAttempt(six.id, 1, T + 6)).toMatchObject({ status: 'queued', resumeSessionId: `sess-${six.id}` });
    expect((await s.getJob(eight.id))?.status).toBe('paused');
  });
});
