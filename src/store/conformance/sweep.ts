import { expect, it } from 'vitest';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

export function sweepTests(h: Harness): void {
  it('sweepStaleRunners: stale runners go offline, their active jobs become lost', async () => {
    const s = await h.open();
    const r1 = await newRunner(s, {}, 'stale', T);
    const r2 = await newRunner(s, {}, 'fresh', T);
    const r3 = await newRunner(s, {}, 'never-connected', T);
    await s.touchRunner(r1.id, T);
    await s.touchRunner(r2.id, T + 100);

    const tok1 = fakeHash('t');
    const j1 = await newJob(s); // r1, assigned
    const j2 = await newJob(s); // r1, running
    const j3 = await newJob(s); // r1, succeeded
    const j4 = await newJob(s); // r2, running
    const j5 = await newJob(s); // queued
    await s.claimJobById(j1.id, { id: r1.id, labels: {} }, tok1, T + 1);
    await s.claimJobById(j2.id, { id: r1.id, labels: {} }, fakeHash('t'), T + 1);
    await s.transitionJob(j2.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
    await s.claimJobById(j3.id, { id: r1.id, labels: {} }, fakeHash('t'), T + 1);
    const j3done = await s.transitionJob(j3.id, 1, ['assigned'], 'succeeded', T + 3);
    await s.claimJobById(j4.id, { id: r2.id, labels: {} }, fakeHash('t'), T + 1);
    const j4run = await s.transitionJob(j4.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });

    const swept = await s.sweepStaleRunners(T + 50, T + 200);
    expect(swept.map((j) => j.id)).toEqual([j1.id, j2.id]);
    // Assigned, never started: back in the queue, no retry used (none left to use here).
    expect(swept[0]).toMatchObject({ status: 'queued', unstarted: true, runnerId: r1.id, attempt: 1, assignedAt: null, retriesLeft: 0 });
    expect(await s.getJob(j1.id)).toMatchObject({ status: 'queued', runnerId: null, attempt: 1, finishedAt: null });
    // its error says why (jobs show printed only the end reason)
    expect(swept[1]).toMatchObject({ status: 'lost', endReason: 'runner_lost', error: 'runner stale went silent: no heartbeat within the heartbeat timeout', finishedAt: T + 200, runnerId: r1.id, attempt: 1 });
    expect(swept[1]?.unstarted).toBeUndefined();
    expect(swept[1]?.startedAt).toBe(T + 2);
    expect(await s.getJob(j2.id)).toEqual(swept[1]);
    expect(await s.findJobByTokenHash(tok1)).toBeNull();
    expect(await s.getJob(j3.id)).toEqual(j3done);
    expect(await s.getJob(j4.id)).toEqual(j4run);
    expect((await s.getJob(j5.id))?.status).toBe('queued');

    const runners = await s.listRunners();
    expect(runners.map((r) => [r.name, r.offline, r.connected])).toEqual([
      ['stale', true, false],
      ['fresh', false, true],
      ['never-connected', true, false],
    ]);
    // A second sweep finds nothing new.
    expect(await s.sweepStaleRunners(T + 50, T + 300)).toEqual([]);
    // A heartbeat brings the runner back.
    await s.touchRunner(r1.id, T + 400);
    expect(await s.getRunner(r1.id)).toMatchObject({ offline: false, connected: true, lastHeartbeatAt: T + 400 });
    expect(r3.lastHeartbeatAt).toBeNull();
  });
}
