import { describe, expect, it } from 'vitest';
import type { JobRow, TreeBudget } from '../store/types.js';
import { resumeNeedsOf } from './budget-resume-needs.js';

/**
 * resumeNeedsOf reads the refused call's worst case the pause stored (JobRow.pausedNeedMicros,
 * `jobs.paused_need_micros`, 0024) as the resume rule does, not the pause message; a row
 * without it (paused before 0024: null; hand-made: absent) falls back to the message's amount.
 */
const T = 1_800_000_000_000;
const paused = (error: string | null, extra: Partial<JobRow> = {}): JobRow => ({
  id: 4, parentId: 2, rootId: 1, agent: 'a', agentVersion: '1', input: {}, status: 'paused', endReason: 'budget', error, priority: 0, selector: {}, runnerId: null,
  attempt: 1, budgetMicros: 0, sessionId: null, resumeSessionId: null, result: null, createdAt: T, assignedAt: null, startedAt: null, finishedAt: null, ...extra,
});
// the tree: $0.50 left; job 2's sub-limit: $0.10 left
const path: TreeBudget[] = [
  { rootId: 1, limitMicros: 1_000_000, spentMicros: 500_000, reservedMicros: 0, remainingMicros: 500_000 },
  { rootId: 1, jobId: 2, limitMicros: 600_000, spentMicros: 500_000, reservedMicros: 0, remainingMicros: 100_000 },
];
const says = (usd: string) => `budget exhausted: ...; this call may cost up to $${usd}. Top up with: ...`;

describe('resumeNeedsOf', () => {
  it('uses the stored need over the message (another amount, or none)', () => {
    const want = { needMicros: 200_000, short: [{ jobId: 2, shortMicros: 100_000 }] };
    expect(resumeNeedsOf(paused(says('0.000050'), { pausedNeedMicros: 200_000 }), path)).toEqual(want);
    expect(resumeNeedsOf(paused('budget exhausted: out of money (a later wording)', { pausedNeedMicros: 200_000 }), path)).toEqual(want);
    expect(resumeNeedsOf(paused(null, { pausedNeedMicros: 600_000 }), path)).toEqual({ needMicros: 600_000, short: [{ shortMicros: 100_000 }, { jobId: 2, shortMicros: 500_000 }] });
  });

  it('names the part of a shortfall that is the needs of jobs paused before it (aheadMicros, at most the shortfall)', () => {
    // the tree: $0.50 left; $0.30 stands before the job ($0.10 of it jobs paused before it, $0.20 resumed jobs' holds);
    // its $0.40 call: short by 0.40 − (0.50 − 0.30) = $0.20, $0.10 of it ahead. Job 2's sub-limit: nothing before it, short by $0.30
    const holds = new Map([['tree', 300_000]]);
    const ahead = new Map([['tree', 100_000]]);
    expect(resumeNeedsOf(paused(null, { pausedNeedMicros: 400_000 }), path, holds, ahead)).toEqual({ needMicros: 400_000, short: [{ shortMicros: 200_000, aheadMicros: 100_000 }, { jobId: 2, shortMicros: 300_000 }] });
    // ahead more than the shortfall (a $0.25 call: short by $0.05 with $0.10 ahead): all of the shortfall is theirs
    expect(resumeNeedsOf(paused(null, { pausedNeedMicros: 250_000 }), path, holds, ahead)).toEqual({ needMicros: 250_000, short: [{ shortMicros: 50_000, aheadMicros: 50_000 }, { jobId: 2, shortMicros: 150_000 }] });
  });

  it('falls back to the message for rows without a stored need (null: paused before 0024; absent)', () => {
    const want = { needMicros: 200_000, short: [{ jobId: 2, shortMicros: 100_000 }] };
    expect(resumeNeedsOf(paused(says('0.200000'), { pausedNeedMicros: null }), path)).toEqual(want);
    expect(resumeNeedsOf(paused(says('0.200000')), path)).toEqual(want);
    // neither says: unknown, 1 µ$ counts
    expect(resumeNeedsOf(paused('out of money', { pausedNeedMicros: null }), path)).toEqual({ needMicros: null, short: [] });
  });

  it('is undefined for a job not paused for budget', () => {
    expect(resumeNeedsOf(paused(null, { status: 'running', endReason: null, pausedNeedMicros: 5 }), path)).toBeUndefined();
  });
});
