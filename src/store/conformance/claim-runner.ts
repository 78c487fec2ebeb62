import { expect, it } from 'vitest';
import type { EventBody } from '../../protocol/index.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

const assigned = (runnerId: number): EventBody => ({ type: 'status', data: { status: 'assigned', message: 'assigned', runnerId } });

/** Every claim is conditional on the runner row (store/claim-runner.ts): never to a runner the store has offline or revoked. */
export function claimRunnerTests(h: Harness): void {
  it('claims refuse a runner the store has offline (swept) or revoked, on every claim path; back online, it claims again', async () => {
    const s = await h.open();
    const live = await newRunner(s, {}, 'live');
    const off = await newRunner(s, {}, 'off');
    const gone = await newRunner(s, {}, 'gone');
    // live and gone heartbeat at T+100; off never did: a sweep with cutoff T+50 takes only off offline.
    expect(await s.touchRunner(live.id, T + 100)).toBe(true);
    expect(await s.touchRunner(gone.id, T + 100)).toBe(true);
    expect(await s.sweepStaleRunners(T + 50, T + 120)).toEqual([]);
    expect(await s.revokeRunner(gone.id, T + 130)).toMatchObject({ jobs: [] });
    const flags = new Map((await s.listRunners()).map((r) => [r.id, { offline: r.offline, revoked: r.revokedAt !== null }]));
    expect([flags.get(live.id), flags.get(off.id), flags.get(gone.id)]).toEqual([
      { offline: false, revoked: false },
      { offline: true, revoked: false },
      { offline: false, revoked: true },
    ]);
    const J1 = await newJob(s);
    const J2 = await newJob(s);
    const J3 = await newJob(s);

    // The batch claim (the dispatcher's): only the claim for the live runner takes.
    const got = await s.claimJobsById(
      [
        { jobId: J1.id, runner: { id: off.id, labels: {} }, tokenHash: fakeHash('a'), holds: 'workspace', event: assigned(off.id) },
        { jobId: J2.id, runner: { id: gone.id, labels: {} }, tokenHash: fakeHash('b'), holds: 'workspace', event: assigned(gone.id) },
        { jobId: J3.id, runner: { id: live.id, labels: {} }, tokenHash: fakeHash('c'), holds: 'workspace', event: assigned(live.id) },
      ],
      T + 200,
    );
    expect(got.map((g) => [g.job.id, g.job.runnerId])).toEqual([[J3.id, live.id]]);
    // One job at a time, by id and by queue order: nothing for off or gone.
    for (const r of [off, gone]) {
      expect(await s.claimJobById(J1.id, { id: r.id, labels: {} }, fakeHash('d'), T + 201)).toBeNull();
      expect(await s.claimJob({ id: r.id, labels: {} }, fakeHash('e'), T + 202)).toBeNull();
    }
    for (const j of [J1, J2]) {
      expect(await s.getJob(j.id)).toMatchObject({ status: 'queued', attempt: 0, runnerId: null, assignedAt: null });
      expect(await s.listEvents(j.id, 0, 10)).toEqual([]);
    }
    // A runner id the store does not know takes nothing either.
    expect(await s.claimJobById(J1.id, { id: gone.id + 100, labels: {} }, fakeHash('f'), T + 203)).toBeNull();

    // off heartbeats again (no longer offline): it claims as any runner.
    expect(await s.touchRunner(off.id, T + 300)).toBe(true);
    expect(await s.claimJobById(J1.id, { id: off.id, labels: {} }, fakeHash('g'), T + 301)).toMatchObject({ id: J1.id, status: 'assigned', runnerId: off.id, attempt: 1 });
    expect(await s.claimJob({ id: off.id, labels: {} }, fakeHash('h'), T + 302)).toMatchObject({ id: J2.id, runnerId: off.id });
    // gone is revoked for good: a heartbeat does not bring it back.
    expect(await s.touchRunner(gone.id, T + 303)).toBe(false);
  });
}
