import { describe, expect, it } from 'vitest';
import { runnerActivityOf } from './runner-activity.js';
import type { RunnerAttemptRow } from '../store/runner-attempts.js';
import type { RunnerRow } from '../store/types.js';

const runner = { id: 1, name: 'r1', createdAt: 1_000 } as RunnerRow;
const attempt = (job: Partial<RunnerAttemptRow['job']>, a: Partial<RunnerAttemptRow> = {}): RunnerAttemptRow =>
  ({ job: { id: 92, agent: 'fixer', attempt: 1, status: 'running', startedAt: null, assignedAt: 2_000, finishedAt: null, endReason: null, error: null, result: null, ...job }, attempt: 1, current: true, outcome: 'running', assignedAt: 2_000, endedAt: null, ...a }) as RunnerAttemptRow;

describe('runnerActivityOf', () => {
  it('says a job the runner was given but never started is assigned, not started (a frozen runner)', () => {
    const entries = runnerActivityOf(runner, [], [attempt({ status: 'assigned' })], 10);
    expect(entries[0]).toEqual({ at: new Date(2_000).toISOString(), kind: 'job.assigned', text: 'job #92 fixer assigned, not started yet', jobId: 92 });
    expect(entries.some((e) => e.kind === 'job.started')).toBe(false);
  });

  it('says a running job started at its start', () => {
    const entries = runnerActivityOf(runner, [], [attempt({ status: 'running', startedAt: 3_000 })], 10);
    expect(entries[0]).toEqual({ at: new Date(3_000).toISOString(), kind: 'job.started', text: 'job #92 fixer started', jobId: 92 });
  });
});
