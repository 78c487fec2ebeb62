/**
 * `flotilla jobs show` (describeJob): a paused job's `finishedAt` is when its pause let its
 * runner slot go (store/paused-hold.ts), shown as `paused:`, never as `finished:` (a fresh
 * user read it as the job having ended); an ended job's is `finished:`.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../protocol/index.js';
import { describeJob } from './jobs.js';

function job(status: Job['status'], finishedAt: string | null): Job {
  return {
    id: 3, parentId: null, rootId: 3, agent: 'test-fixer', agentVersion: '1', input: {}, status, endReason: null, error: null,
    priority: 0, selector: {}, runnerId: 1, attempt: 1, budgetMicros: 1_000_000, sessionId: null, result: null,
    createdAt: '2026-12-02T10:00:00.000Z', assignedAt: null, startedAt: '2026-12-02T10:00:01.000Z', finishedAt,
    usage: { modelCalls: 1, inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 5, costMicros: 42, estimatedCalls: 0 },
  };
}
const line = (text: string, head: string) => text.split('\n').find((l) => l.startsWith(head));

describe('jobs show: when a job paused or finished', () => {
  it('paused with its slot let go: `paused:` with the time, no `finished:`; succeeded: `finished:`; paused holding its slot: neither', () => {
    const paused = describeJob(job('paused', '2026-12-02T10:05:00.000Z'));
    expect([line(paused, 'finished:'), line(paused, 'paused:')]).toEqual([undefined, 'paused:    2026-12-02T10:05:00.000Z']);
    const done = describeJob(job('succeeded', '2026-12-02T10:06:00.000Z'));
    expect([line(done, 'finished:'), line(done, 'paused:')]).toEqual(['finished:  2026-12-02T10:06:00.000Z', undefined]);
    const holding = describeJob(job('paused', null));
    expect([line(holding, 'finished:'), line(holding, 'paused:')]).toEqual([undefined, undefined]);
  });
});

describe('jobs show: the result', () => {
  it("the agent's own result fields beyond summary, branch and commit are printed as JSON (a migrator's children showed only with --json: a fresh tester)", () => {
    const children = [{ jobId: 4, repo: 'api', status: 'succeeded' }];
    const text = describeJob({ ...job('succeeded', '2026-12-02T10:06:00.000Z'), result: { summary: 'Started 1 child.', branch: 'flotilla/job-3', children } });
    expect(text.endsWith(`\nStarted 1 child.\n\nresult:\n${JSON.stringify({ children }, null, 2)}`)).toBe(true);
    expect(describeJob({ ...job('succeeded', '2026-12-02T10:06:00.000Z'), result: { summary: 'done' } })).not.toMatch(/result:/);
    const long = describeJob({ ...job('succeeded', '2026-12-02T10:06:00.000Z'), result: { notes: 'x'.repeat(5000) } });
    expect(long).toMatch(/\n\.\.\. \(cut at 4000 characters: --json shows it whole\)$/);
  });
});
