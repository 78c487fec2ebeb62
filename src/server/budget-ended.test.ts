import { describe, expect, it } from 'vitest';
import type { JobStatus } from '../protocol/index.js';
import type { JobRow } from '../store/types.js';
import { endedBudgetRefusal } from './budget-ended.js';

/**
 * The rule refusing a top-up nothing can spend any more (server/budget-ended.ts): the budget's
 * owner (root, or sub-limited child) or an ancestor of it has ended; the job the top-up names
 * may have ended while the owner runs. Hand-made rows over a map.
 */
const T = 1_800_000_000_000;
const row = (id: number, parentId: number | null, budgetMicros: number, status: JobStatus = 'running'): JobRow => ({
  id, parentId, rootId: 1, agent: 'a', agentVersion: '1', input: {}, status, endReason: null, error: null, priority: 0, selector: {}, runnerId: null,
  attempt: 1, budgetMicros, sessionId: null, resumeSessionId: null, result: null, createdAt: T, assignedAt: null, startedAt: null, finishedAt: null,
});
/** R 1 ($1) → A 2 (sub-limit $0.50) → S 3 (sub-limit $0.20) → N 4 (none of its own); R → X 5 (none). */
const store = (over: Partial<Record<number, JobStatus>> = {}) => {
  const jobs = new Map([row(1, null, 1_000_000), row(2, 1, 500_000), row(3, 2, 200_000), row(4, 3, 0), row(5, 1, 0)].map((j) => [j.id, { ...j, status: over[j.id] ?? j.status }]));
  return { jobs, getJob: async (id: number) => jobs.get(id) ?? null };
};

describe('endedBudgetRefusal', () => {
  it('takes a top-up while the owner and its ancestors run, whatever the named job did', async () => {
    const s = store({ 4: 'succeeded', 5: 'failed' });
    expect(await endedBudgetRefusal(s, s.jobs.get(4)!, 3)).toBeNull();
    expect(await endedBudgetRefusal(s, s.jobs.get(3)!, 3)).toBeNull();
    expect(await endedBudgetRefusal(s, s.jobs.get(5)!, undefined)).toBeNull();
  });

  it('refuses the sub-limit of an ended child, naming the live budget above it', async () => {
    const s = store({ 3: 'cancelled' });
    const tail = 'its sub-limit applies only to it and its descendants, which spend nothing more, so it takes no top-up; the budget above it still takes one: job 2\'s sub-limit (flotilla budget 2 --add <USD>)';
    expect(await endedBudgetRefusal(s, s.jobs.get(3)!, 3)).toBe(`job 3 has ended (cancelled): ${tail}`);
    expect(await endedBudgetRefusal(s, s.jobs.get(4)!, 3)).toBe(`job 3 (whose sub-limit job 4 uses) has ended (cancelled): ${tail}`);
    // A's sub-limit, the one above, is still taken
    expect(await endedBudgetRefusal(s, s.jobs.get(2)!, 2)).toBeNull();
    const a = store({ 2: 'lost' });
    expect(await endedBudgetRefusal(a, a.jobs.get(2)!, 2)).toBe(
      "job 2 has ended (lost): its sub-limit applies only to it and its descendants, which spend nothing more, so it takes no top-up; the budget above it still takes one: job tree 1's (flotilla budget 1 --add <USD>)",
    );
  });

  it('refuses the sub-limit of a live child whose ancestor has ended (it is cancelled as an orphan)', async () => {
    const s = store({ 2: 'failed' });
    expect(await endedBudgetRefusal(s, s.jobs.get(4)!, 3)).toBe(
      "job 2 (an ancestor of job 3, whose sub-limit job 4 uses) has ended (failed): job 3's sub-limit applies only to job 3 and its descendants, which end with job 2 (a job whose parent has ended is cancelled), so it takes no top-up; the budget above it still takes one: job tree 1's (flotilla budget 1 --add <USD>)",
    );
    expect(await endedBudgetRefusal(s, s.jobs.get(3)!, 3)).toMatch(/^job 2 \(an ancestor of job 3\) has ended \(failed\): /);
  });

  it('an ended root refuses every budget of its tree, as before', async () => {
    const s = store({ 1: 'succeeded' });
    const msg = 'has ended (succeeded): its tree spends nothing more, so it takes no top-up';
    expect(await endedBudgetRefusal(s, s.jobs.get(1)!, undefined)).toBe(`job 1 ${msg}`);
    expect(await endedBudgetRefusal(s, s.jobs.get(5)!, undefined)).toBe(`job 1 (the root of job 5's tree) ${msg}`);
    expect(await endedBudgetRefusal(s, s.jobs.get(4)!, 3)).toBe(`job 1 (the root of job 4's tree) ${msg}`);
  });
});
