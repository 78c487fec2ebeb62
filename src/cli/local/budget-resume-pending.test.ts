/**
 * `flotilla budget JOB` (and `--add`) on a job whose budget resume is pending (status `paused`,
 * endReason `budget_resume`: a top-up granted the resume, its stopped process has not exited yet)
 * says it resumes once that process has exited, not to top it up again; a job paused for budget
 * (endReason `budget`) still says a top-up resumes it. Real CLI (main) over a real server and
 * SQLite store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../server/test-helpers.js';
import { runCli } from '../test-io.js';

describe('flotilla budget on a paused job', () => {
  let t: TestServer;
  const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);
  /** A root job moved to `paused` with `endReason` (queued → assigned → running → paused). */
  const pausedJob = async (endReason: string): Promise<number> => {
    const now = Date.now();
    const id = (await t.store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now })).id;
    expect(await t.store.transitionJob(id, null, ['queued'], 'assigned', now)).not.toBeNull();
    expect(await t.store.transitionJob(id, null, ['assigned'], 'running', now, { startedAt: now })).not.toBeNull();
    expect(await t.store.transitionJob(id, null, ['running'], 'paused', now, { endReason })).not.toBeNull();
    return id;
  };
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('resume pending (budget_resume): no top-up invited, with or without --add', async () => {
    const id = await pausedJob('budget_resume');
    for (const args of [['budget', String(id)], ['budget', String(id), '--add', '1']]) {
      const r = await run(...args);
      expect([r.code, r.err]).toEqual([0, '']);
      expect(r.out).toMatch(new RegExp(`^paused:\\s+job ${id} resumes as soon as its stopped process has exited \\(no top-up needed\\), unless that process ends the job first: one that exits 0 while it is being stopped ends it succeeded, its work done, and nothing of the top-up is spent$`, 'm'));
      expect(r.out).not.toMatch(/a top-up resumes it/);
    }
  });

  it('paused for budget (budget): a top-up resumes it', async () => {
    const id = await pausedJob('budget');
    const r = await run('budget', String(id));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`^paused:\\s+job ${id} is paused for budget: a top-up resumes it \\(flotilla budget ${id} --add USD\\)$`, 'm'));
  });
});
