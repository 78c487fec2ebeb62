import { expect, it } from 'vitest';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

/** An assigned job its runner never starts goes back to the queue with no retry used, 3 times at most (store/unstarted.ts). */
export function unstartedTests(h: Harness): void {
  it('requeueUnstartedJob: back in the queue 3 times with no retry used (a refusal does not count), then the 4th time failed runner_never_started', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const J = await newJob(s, { retries: 2 });
    const claim = async (attempt: number, tokenHash = fakeHash('t')) =>
      expect(await s.claimJobById(J.id, { id: r.id, labels: {} }, tokenHash, T + attempt)).toMatchObject({ status: 'assigned', attempt, runnerId: r.id });
    // attempt 1: never started; 2: refused (requeueJob, not counted); 3 and 4: never started.
    await claim(1);
    expect(await s.requeueUnstartedJob(J.id, 1, T + 100)).toMatchObject({ status: 'queued', attempt: 1, runnerId: null, assignedAt: null, retriesLeft: 2, endReason: null, finishedAt: null });
    await claim(2);
    expect(await s.requeueJob(J.id, 2, T + 200)).toBe(true);
    for (const attempt of [3, 4]) {
      await claim(attempt);
      expect(await s.requeueUnstartedJob(J.id, attempt, T + attempt * 100)).toMatchObject({ status: 'queued', attempt, runnerId: null, retriesLeft: 2 });
    }
    // Back 3 times already without starting: the 4th time it never starts, it fails.
    const token = fakeHash('last');
    await claim(5, token);
    expect(await s.requeueUnstartedJob(J.id, 4, T + 500)).toBeNull(); // a stale attempt changes nothing
    const failed = await s.requeueUnstartedJob(J.id, 5, T + 501);
    expect(failed).toMatchObject({ status: 'failed', endReason: 'runner_never_started', attempt: 5, runnerId: r.id, finishedAt: T + 501, retriesLeft: 2 });
    expect(failed?.error).toBe(
      'assigned 4 times and never started (back in the queue 3 times without using a retry): failed, so that it does not go round for ever; the runners’ logs say why they did not start it',
    );
    expect(await s.getJob(J.id)).toEqual(failed);
    expect(await s.findJobByTokenHash(token)).toBeNull();
    expect(await s.requeueUnstartedJob(J.id, 5, T + 502)).toBeNull(); // ended: nothing changes
    expect(await s.claimJobById(J.id, { id: r.id, labels: {} }, fakeHash('t'), T + 600)).toBeNull();
    // Only an assigned job: a started one is not "unstarted".
    const K = await newJob(s);
    await s.claimJobById(K.id, { id: r.id, labels: {} }, fakeHash('k'), T);
    await s.transitionJob(K.id, 1, ['assigned'], 'running', T, { startedAt: T });
    expect(await s.requeueUnstartedJob(K.id, 1, T + 1)).toBeNull();
    expect((await s.getJob(K.id))?.status).toBe('running');
  });

  it('sweepStaleRunners counts the same requeues: a job back twice from its runner and once from a sweep fails at the next sweep; another job is requeued', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'r1');
    const A = await newJob(s, { retries: 1 });
    const B = await newJob(s);
    for (const attempt of [1, 2]) {
      await s.claimJobById(A.id, { id: r.id, labels: {} }, fakeHash('a'), T);
      expect((await s.requeueUnstartedJob(A.id, attempt, T))?.status).toBe('queued');
    }
    await s.touchRunner(r.id, T);
    await s.claimJobById(A.id, { id: r.id, labels: {} }, fakeHash('a'), T);
    // r goes silent (last heartbeat T < cutoff T+1): A, never started, goes back a 3rd time.
    const first = await s.sweepStaleRunners(T + 1, T + 2);
    expect(first).toMatchObject([{ id: A.id, status: 'queued', unstarted: true, runnerId: r.id, attempt: 3, retriesLeft: 1 }]);
    // r is back; it takes A (attempt 4) and B, and goes silent again.
    await s.touchRunner(r.id, T + 10);
    await s.claimJobById(A.id, { id: r.id, labels: {} }, fakeHash('a'), T + 11);
    await s.claimJobById(B.id, { id: r.id, labels: {} }, fakeHash('b'), T + 11);
    const second = await s.sweepStaleRunners(T + 12, T + 13);
    expect(second).toMatchObject([
      { id: A.id, status: 'failed', unstarted: true, endReason: 'runner_never_started', runnerId: r.id, attempt: 4, finishedAt: T + 13, retriesLeft: 1 },
      { id: B.id, status: 'queued', unstarted: true, runnerId: r.id, attempt: 1, finishedAt: null },
    ]);
    expect(second[0]!.error).toMatch(/^assigned 4 times and never started/);
    expect(await s.getJob(A.id)).toMatchObject({ status: 'failed', runnerId: r.id, finishedAt: T + 13 });
    expect(await s.getJob(B.id)).toMatchObject({ status: 'queued', runnerId: null, assignedAt: null });
    expect(await s.listActiveAssignments()).toEqual([]);
    // Reported once: a later sweep finds nothing more.
    expect(await s.sweepStaleRunners(T + 14, T + 15)).toEqual([]);
  });
}
