// A job paused for budget has its stopped attempt's end as finishedAt; the dashboard's Duration
// read as if the job were over (fresh-tester finding). web/src/format.ts jobDuration.
import { describe, expect, it } from 'vitest';
import { jobDuration } from '../../web/src/format.js';

describe('jobDuration', () => {
  const startedAt = '2026-12-06T10:00:00.000Z';
  const finishedAt = '2026-12-06T10:01:20.000Z'; // 80 s later
  it('a finished job: started → finished; a running one: started → now', () => {
    expect(jobDuration({ status: 'succeeded', startedAt, finishedAt })).toBe('1m 20s');
    expect(jobDuration({ status: 'running', startedAt, finishedAt: null }, Date.parse(startedAt) + 5_000)).toBe('5s');
    expect(jobDuration({ status: 'queued', startedAt: null, finishedAt: null })).toBe('—');
  });
  it('a paused job: its time so far, marked paused (it is not over)', () => {
    expect(jobDuration({ status: 'paused', startedAt, finishedAt })).toBe('1m 20s (paused)');
  });
});
