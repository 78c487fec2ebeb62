import { expect, it } from 'vitest';
import type { Store } from '../types.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

/** What the dispatcher records with each claim (server/dispatcher.ts, dispatch-assign.ts): the runner in an `assigned` status event. */
async function claimOn(s: Store, jobId: number, runnerId: number, now: number) {
  const job = await s.claimJobById(jobId, { id: runnerId, labels: {} }, fakeHash('t'), now);
  expect(job).toMatchObject({ id: jobId, runnerId, status: 'assigned' });
  await s.appendServerEvent(jobId, { type: 'status', data: { status: 'assigned', message: `assigned to runner ${runnerId}`, runnerId } }, now);
  return job!;
}

/** store/runner-attempts.ts: a runner's recent jobs, one per attempt that ran on it, with its outcome there. */
export function runnerAttemptTests(h: Harness): void {
  it('recent attempts: a job lost on r1 and finished on r2 shows on both; a refused attempt shows requeued; a claim without an event still shows', async () => {
    const s = await h.open();
    const r1 = await newRunner(s, {}, 'r1');
    const r2 = await newRunner(s, {}, 'r2');
    const lostJob = await newJob(s, { retries: 1 });
    await claimOn(s, lostJob.id, r1.id, T + 1);
    await s.transitionJob(lostJob.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
    const [retried] = await s.sweepStaleRunners(T + 50, T + 100);
    expect(retried).toMatchObject({ id: lostJob.id, status: 'queued', runnerId: r1.id });
    // What reportEndedJobs (server/status-events.ts) records for the retry.
    await s.appendServerEvent(lostJob.id, { type: 'status', data: { status: 'queued', message: 'runner r1 silent for 30s; back in the queue', runnerId: r1.id, lostAttempt: 1 } }, T + 100);
    // The sweep took both (never heartbeated) offline; a claim needs its runner online (claim-runner.ts): both heartbeat again.
    for (const r of [r1, r2]) expect(await s.touchRunner(r.id, T + 150)).toBe(true);
    await claimOn(s, lostJob.id, r2.id, T + 200);
    await s.transitionJob(lostJob.id, 2, ['assigned'], 'succeeded', T + 300);

    const refused = await newJob(s);
    await claimOn(s, refused.id, r1.id, T + 400);
    expect(await s.requeueJob(refused.id, 1, T + 401)).toBe(true);
    await s.appendServerEvent(refused.id, { type: 'status', data: { status: 'queued', message: 'runner r1 refused it (busy); back in the queue', runnerId: r1.id } }, T + 401);
    await claimOn(s, refused.id, r1.id, T + 500);

    const bare = await newJob(s);
    expect(await s.claimJobById(bare.id, { id: r1.id, labels: {} }, fakeHash('t'), T + 600)).toMatchObject({ id: bare.id, attempt: 1 });

    const view = (a: Awaited<ReturnType<Store['listRecentAttemptsForRunner']>>) => a.map((x) => [x.job.id, x.attempt, x.outcome, x.current, x.job.status, x.assignedAt, x.endedAt]);
    expect(view(await s.listRecentAttemptsForRunner(r1.id, 10))).toEqual([
      [bare.id, 1, 'assigned', true, 'assigned', T + 600, null],
      [refused.id, 2, 'assigned', true, 'assigned', T + 500, null],
      [refused.id, 1, 'requeued', false, 'assigned', T + 400, T + 401],
      [lostJob.id, 1, 'lost', false, 'succeeded', T + 1, T + 100],
    ]);
    expect(view(await s.listRecentAttemptsForRunner(r2.id, 10))).toEqual([[lostJob.id, 2, 'succeeded', true, 'succeeded', T + 200, T + 300]]);
    expect((await s.listRecentAttemptsForRunner(r1.id, 2)).map((x) => [x.job.id, x.attempt])).toEqual([
      [bare.id, 1],
      [refused.id, 2],
    ]);
    expect(await s.listRecentAttemptsForRunner(r2.id + 100, 10)).toEqual([]);
    await expect(s.listRecentAttemptsForRunner(r1.id, 101)).rejects.toThrow(/limit/);
    await expect(s.listRecentAttemptsForRunner(0, 10)).rejects.toThrow(/runnerId/);
  });
}
