import { expect, it } from 'vitest';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

/** Issue 5: holds, revocation, retries of lost jobs, fleet queries. */
export function fleetTests(h: Harness): void {
  it('fleet: holds are stored, listed while active, cleared; a new runner can start held', async () => {
    const s = await h.open();
    const a = await newRunner(s, {}, 'a');
    const b = await s.createRunner({ name: 'b', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: T, hold: { until: T + 60_000, reason: 'setup', kind: 'provisioning' } });
    expect(a.hold).toBeNull();
    expect(a.revokedAt).toBeNull();
    expect(b.hold).toEqual({ until: T + 60_000, reason: 'setup', kind: 'provisioning' });
    const held = await s.setRunnerHold(a.id, { until: T + 900_000, reason: 'disk full', kind: 'manual' });
    expect(held).toMatchObject({ id: a.id, hold: { until: T + 900_000, reason: 'disk full', kind: 'manual' } });
    expect(await s.getRunner(a.id)).toEqual(held);
    expect(await s.listHeldRunnerIds(T)).toEqual([a.id, b.id]);
    // b's hold ends at T+60000 (exclusive), a's at T+900000.
    expect(await s.listHeldRunnerIds(T + 60_000)).toEqual([a.id]);
    expect(await s.listHeldRunnerIds(T + 900_000)).toEqual([]);
    expect((await s.setRunnerHold(a.id, null))?.hold).toBeNull();
    expect(await s.listHeldRunnerIds(T)).toEqual([b.id]);
    expect(await s.setRunnerHold(a.id + 1000, null)).toBeNull();
    await expect(s.setRunnerHold(a.id, { until: 1.5, reason: 'x', kind: 'manual' })).rejects.toThrow(/hold.until/);
  });

  it('fleet: revoking a runner loses at once the jobs whose session can only resume there (paused for budget on it, queued to resume there); others are untouched', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'r');
    const other = await newRunner(s, {}, 'other');
    const paused = await newJob(s);
    const resuming = await newJob(s);
    const elsewhere = await newJob(s);
    for (const [j, on] of [[paused, r], [resuming, r], [elsewhere, other]] as const) {
      await s.claimJobById(j.id, { id: on.id, labels: {} }, fakeHash('t'), T + 1);
      await s.transitionJob(j.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
      expect(await s.pauseJobForBudget(j.id, 1, 'budget exhausted: job tree N', T + 3, 500)).toMatchObject({ status: 'paused' });
    }
    // a top-up resumed this one: queued, pinned to r (its session is there)
    expect((await s.resumeBudgetPausedJobs(resuming.id, T + 4, [resuming.id])).map((j) => j.status)).toEqual(['queued']);
    await s.setRunnerHold(r.id, { until: T + 900_000, reason: 'maintenance', kind: 'manual' });
    const res = await s.revokeRunner(r.id, T + 10);
    expect(res?.jobs).toEqual([]);
    expect(res?.runner.hold).toBeNull(); // a revoked runner is not listed as held
    expect(await s.listHeldRunnerIds(T + 10)).toEqual([]);
    const error = `its session and workspace are kept on runner r (${r.id}), which was revoked: it cannot resume; start a new run`;
    expect(res?.stranded.map((j) => [j.id, j.status, j.endReason, j.error, j.finishedAt])).toEqual([
      [paused.id, 'lost', 'runner_revoked', error, T + 10],
      [resuming.id, 'lost', 'runner_revoked', error, T + 10],
    ]);
    expect(await s.getJob(paused.id)).toMatchObject({ status: 'lost', endReason: 'runner_revoked' });
    expect(await s.getJob(elsewhere.id)).toMatchObject({ status: 'paused', endReason: 'budget' });
    // a second revoke ends nothing more
    expect((await s.revokeRunner(r.id, T + 20))?.stranded).toEqual([]);
  });

  it('fleet: revoking kills the tokens of the runner’s active jobs at once; the sweep ends them (retried when allowed) once its heartbeat is stale', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'r');
    const other = await newRunner(s, {}, 'other');
    const tok1 = fakeHash('t');
    const tok2 = fakeHash('t');
    const j1 = await newJob(s); // no retries → lost
    const j2 = await newJob(s, { retries: 2 }); // retried
    const j3 = await newJob(s); // on the other runner: untouched
    const j4 = await newJob(s, { retries: 2 }); // being cancelled: cancelled (never retried, never lost)
    await s.claimJobById(j1.id, { id: r.id, labels: {} }, tok1, T + 1);
    await s.claimJobById(j2.id, { id: r.id, labels: {} }, tok2, T + 1);
    await s.transitionJob(j2.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
    await s.claimJobById(j4.id, { id: r.id, labels: {} }, fakeHash('t'), T + 1);
    await s.transitionJob(j4.id, 1, ['assigned'], 'cancelling', T + 3);
    await s.claimJobById(j3.id, { id: other.id, labels: {} }, fakeHash('t'), T + 1);
    expect((await s.listActiveAssignments()).map((a) => [a.jobId, a.runnerId, a.attempt, a.status])).toEqual([
      [j1.id, r.id, 1, 'assigned'],
      [j2.id, r.id, 1, 'running'],
      [j3.id, other.id, 1, 'assigned'],
    ]);

    await s.transitionJob(j1.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
    await s.touchRunner(r.id, T + 5);
    await s.touchRunner(other.id, T + 100);
    // Revoking kills the tokens at once but leaves the jobs (and `offline`) to the sweep: the
    // runner stops them within its lease (last heartbeat + timeout), so no retry runs beside them.
    const res = await s.revokeRunner(r.id, T + 10);
    expect(res?.runner).toMatchObject({ id: r.id, revokedAt: T + 10, offline: false, connected: false });
    expect(res?.jobs.map((j) => [j.id, j.status, j.attempt])).toEqual([
      [j1.id, 'running', 1],
      [j2.id, 'running', 1],
      [j4.id, 'cancelling', 1],
    ]);
    expect(await s.findJobByTokenHash(tok1)).toBeNull();
    expect(await s.findJobByTokenHash(tok2)).toBeNull();
    expect(await s.claimJob({ id: other.id, labels: {} }, fakeHash('t'), T + 11)).toBeNull();
    // A sweep whose cutoff is not past the revoked runner's last heartbeat ends nothing.
    expect(await s.sweepStaleRunners(T + 5, T + 12)).toEqual([]);
    const swept = await s.sweepStaleRunners(T + 6, T + 15);
    expect(swept.map((j) => [j.id, j.status, j.endReason, j.retriesLeft])).toEqual([
      [j1.id, 'lost', 'runner_lost', 0],
      [j2.id, 'queued', null, 1],
      [j4.id, 'cancelled', 'cancelled', 2],
    ]);
    expect(swept[1]).toMatchObject({ runnerId: r.id, attempt: 1, assignedAt: null, startedAt: null, finishedAt: null });
    expect((await s.getJob(j3.id))?.status).toBe('assigned');
    // The retried job is claimed again with a new attempt, on another runner.
    const again = await s.claimJob({ id: other.id, labels: {} }, fakeHash('t'), T + 20);
    expect(again).toMatchObject({ id: j2.id, attempt: 2, runnerId: other.id, status: 'assigned', retriesLeft: 1 });
    // Revoking again keeps the first time and ends nothing more.
    const twice = await s.revokeRunner(r.id, T + 30);
    expect(twice?.runner.revokedAt).toBe(T + 10);
    expect(twice?.jobs).toEqual([]);
    expect(await s.revokeRunner(r.id + 1000, T)).toBeNull();
    // A revoked runner's heartbeat changes nothing (and says so); a live one's does.
    expect(await s.touchRunner(r.id, T + 40)).toBe(false);
    expect(await s.getRunner(r.id)).toMatchObject({ connected: false, offline: true });
    expect(await s.touchRunner(other.id, T + 40)).toBe(true);
  });

  it('fleet: the sweep retries a lost job while it has retries left, then marks it lost', async () => {
    const s = await h.open();
    const r1 = await newRunner(s, {}, 'r1');
    const r2 = await newRunner(s, {}, 'r2');
    const job = await newJob(s, { retries: 1 });
    expect(job.retriesLeft).toBe(1);
    await s.touchRunner(r1.id, T);
    await s.claimJob({ id: r1.id, labels: {} }, fakeHash('t'), T + 1);
    await s.transitionJob(job.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
    const first = await s.sweepStaleRunners(T + 50, T + 100);
    expect(first.map((j) => [j.id, j.status, j.retriesLeft, j.runnerId])).toEqual([[job.id, 'queued', 0, r1.id]]);
    // The returned row names the runner it was lost on; the stored one is queued on no runner.
    expect(await s.getJob(job.id)).toMatchObject({ status: 'queued', runnerId: null, attempt: 1 });
    expect((await s.listJobs({ limit: 10, runnerId: r1.id })).map((j) => j.id)).toEqual([]);
    await s.touchRunner(r2.id, T + 200);
    const second = await s.claimJob({ id: r2.id, labels: {} }, fakeHash('t'), T + 201);
    expect(second).toMatchObject({ id: job.id, attempt: 2, runnerId: r2.id });
    await s.transitionJob(job.id, 2, ['assigned'], 'running', T + 202, { startedAt: T + 202 });
    const lost = await s.sweepStaleRunners(T + 300, T + 400);
    expect(lost.map((j) => [j.id, j.status, j.endReason, j.attempt])).toEqual([[job.id, 'lost', 'runner_lost', 2]]);
    await expect(newJob(s, { retries: -1 })).rejects.toThrow(/retries/);
  });

  it('fleet: recent jobs of a runner, newest first; queued count', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'r');
    const jobs = [];
    for (let i = 0; i < 4; i++) jobs.push(await newJob(s));
    for (const j of jobs.slice(0, 3)) await s.claimJobById(j.id, { id: r.id, labels: {} }, fakeHash('t'), T + 1);
    expect((await s.listRecentJobsForRunner(r.id, 2)).map((j) => j.id)).toEqual([jobs[2]!.id, jobs[1]!.id]);
    expect(await s.countQueuedJobs()).toBe(1);
    await expect(s.listRecentJobsForRunner(r.id, 101)).rejects.toThrow(/limit/);
  });
}
