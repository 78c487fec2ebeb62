import { expect, it } from 'vitest';
import type { JobRow } from '../types.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

export function claimTests(h: Harness): void {
  it('listQueuedForDispatch: dispatch order, pages by (priority, id) without overlap or gap', async () => {
    const s = await h.open();
    const prios = [0, 5, 0, 5, -1, 5, 0];
    const jobs: JobRow[] = [];
    for (const priority of prios) jobs.push(await newJob(s, { priority }));
    const id = (i: number) => jobs[i]!.id;
    // priority 5: jobs 1, 3, 5; priority 0: jobs 0, 2, 6; priority -1: job 4.
    const order = [id(1), id(3), id(5), id(0), id(2), id(6), id(4)];
    expect((await s.listQueuedForDispatch(100)).map((q) => q.id)).toEqual(order);
    const seen: number[] = [];
    let after: { priority: number; id: number } | undefined;
    for (let page = 0; page < 10; page++) {
      const got = await s.listQueuedForDispatch(2, after);
      seen.push(...got.map((q) => q.id));
      if (got.length < 2) break;
      after = { priority: got[1]!.priority, id: got[1]!.id };
    }
    expect(seen).toEqual(order);
  });

  it('claimJob: priority first, then FIFO; assigns runner, attempt, time, token', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const prios = [0, 5, 0, 5, -1];
    const jobs: JobRow[] = [];
    for (const priority of prios) jobs.push(await newJob(s, { priority }));
    const id = (i: number) => jobs[i]!.id;
    // priority 5 (ids 2nd, 4th), then priority 0 (1st, 3rd), then -1 (5th).
    const expectedOrder = [id(1), id(3), id(0), id(2), id(4)];
    const got: number[] = [];
    for (let k = 0; k < 5; k++) {
      const token = fakeHash('t');
      const c = await s.claimJob({ id: r.id, labels: {} }, token, T + 100 + k);
      expect(c).not.toBeNull();
      expect(c).toMatchObject({ status: 'assigned', attempt: 1, runnerId: r.id, assignedAt: T + 100 + k });
      expect((await s.findJobByTokenHash(token))?.id).toBe(c!.id);
      got.push(c!.id);
    }
    expect(got).toEqual(expectedOrder);
    expect(await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T + 200)).toBeNull();
    expect((await s.listActiveJobsForRunner(r.id)).map((j) => j.id)).toEqual(jobs.map((j) => j.id));
  });

  it('claimJob: selector must be a subset of the runner labels', async () => {
    const s = await h.open();
    const linux = await newRunner(s, { os: 'linux', toolchain: 'node' });
    const mac = await newRunner(s, { os: 'mac' });
    const A = await newJob(s, { selector: { os: 'mac' } });
    const B = await newJob(s, { selector: { os: 'linux', gpu: '1' } });
    const C = await newJob(s, { selector: {} });
    const D = await newJob(s, { selector: { os: 'linux', toolchain: 'node' } });
    const E = await newJob(s, { selector: { toolchain: 'node' } });
    const F = await newJob(s, { selector: { toolchain: 'python' } });
    const G = await newJob(s, { selector: { os: 'Linux' } });
    const claims: number[] = [];
    for (;;) {
      const c = await s.claimJob({ id: linux.id, labels: { os: 'linux', toolchain: 'node' } }, fakeHash('t'), T);
      if (!c) break;
      claims.push(c.id);
    }
    expect(claims).toEqual([C.id, D.id, E.id]);
    const m = await s.claimJob({ id: mac.id, labels: { os: 'mac' } }, fakeHash('t'), T);
    expect(m?.id).toBe(A.id);
    expect(m?.runnerId).toBe(mac.id);
    for (const left of [B, F, G]) expect((await s.getJob(left.id))?.status).toBe('queued');
    // A runner with more labels than needed still matches.
    const big = await newRunner(s, { os: 'linux', gpu: '1', toolchain: 'python', extra: 'x' });
    const claimedByBig: number[] = [];
    for (;;) {
      const c = await s.claimJob({ id: big.id, labels: { os: 'linux', gpu: '1', toolchain: 'python', extra: 'x' } }, fakeHash('t'), T);
      if (!c) break;
      claimedByBig.push(c.id);
    }
    expect(claimedByBig).toEqual([B.id, F.id]);
    expect((await s.getJob(G.id))?.status).toBe('queued');
  });

  it('claimJob: finds a matching job behind more than a page of non-matching ones', async () => {
    const s = await h.open();
    const r = await newRunner(s, { os: 'linux' });
    for (let i = 0; i < 230; i++) await newJob(s, { selector: { os: 'mac' }, priority: i % 3 });
    const target = await newJob(s, { selector: { os: 'linux' }, priority: 0 });
    const c = await s.claimJob({ id: r.id, labels: { os: 'linux' } }, fakeHash('t'), T);
    expect(c?.id).toBe(target.id);
    expect(await s.claimJob({ id: r.id, labels: { os: 'linux' } }, fakeHash('t'), T)).toBeNull();
  });

  it('claimJobById: only that job, only if queued and matching', async () => {
    const s = await h.open();
    const linux = await newRunner(s, { os: 'linux' });
    const mac = await newRunner(s, { os: 'mac' });
    const j = await newJob(s, { selector: { os: 'linux' } });
    const other = await newJob(s, { selector: {}, priority: 50 });
    expect(await s.claimJobById(j.id, { id: mac.id, labels: { os: 'mac' } }, fakeHash('t'), T)).toBeNull();
    const c = await s.claimJobById(j.id, { id: linux.id, labels: { os: 'linux' } }, fakeHash('t'), T + 3);
    expect(c).toMatchObject({ id: j.id, status: 'assigned', attempt: 1, runnerId: linux.id, assignedAt: T + 3 });
    expect(await s.claimJobById(j.id, { id: linux.id, labels: { os: 'linux' } }, fakeHash('t'), T + 4)).toBeNull();
    expect(await s.claimJobById(other.id + 99, { id: linux.id, labels: {} }, fakeHash('t'), T)).toBeNull();
    expect((await s.getJob(other.id))?.status).toBe('queued');
  });

  it('requeue: back to queued, fenced by attempt; the next claim is attempt 2', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const j = await newJob(s);
    const tok1 = fakeHash('t');
    expect((await s.claimJob({ id: r.id, labels: {} }, tok1, T + 1))?.attempt).toBe(1);
    expect(await s.requeueJob(j.id, 2, T + 2)).toBe(false);
    expect(await s.requeueJob(j.id, 1, T + 2)).toBe(true);
    const q = await s.getJob(j.id);
    expect(q).toMatchObject({ status: 'queued', attempt: 1, runnerId: null, assignedAt: null });
    expect(await s.findJobByTokenHash(tok1)).toBeNull();
    expect(await s.requeueJob(j.id, 1, T + 3)).toBe(false);
    const tok2 = fakeHash('t');
    const again = await s.claimJob({ id: r.id, labels: {} }, tok2, T + 4);
    expect(again).toMatchObject({ id: j.id, attempt: 2, status: 'assigned', assignedAt: T + 4 });
    expect(await s.requeueJob(j.id, 1, T + 5)).toBe(false);
    expect((await s.getJob(j.id))?.status).toBe('assigned');
    expect((await s.findJobByTokenHash(tok2))?.id).toBe(j.id);
  });

  it('claimJob under concurrency: 20 jobs, 8 claimers, each job claimed exactly once', async () => {
    const s = await h.open();
    const jobIds: number[] = [];
    for (let i = 0; i < 20; i++) jobIds.push((await newJob(s, { priority: i % 4 })).id);
    const claimers = [];
    for (let k = 0; k < 8; k++) {
      const store = k === 0 ? s : await h.another(s);
      claimers.push({ store, runner: await newRunner(s, { n: String(k) }, `r${k}`) });
    }
    const perClaimer = await Promise.all(
      claimers.map(async ({ store, runner }) => {
        const mine: number[] = [];
        for (;;) {
          const c = await store.claimJob({ id: runner.id, labels: runner.labels }, fakeHash('t'), T + 1);
          if (!c) return mine;
          expect(c.runnerId).toBe(runner.id);
          mine.push(c.id);
        }
      }),
    );
    const all = perClaimer.flat();
    expect(all.length).toBe(20);
    expect([...new Set(all)].sort((a, b) => a - b)).toEqual(jobIds);
    for (const [k, mine] of perClaimer.entries()) {
      for (const id of mine) expect(await s.getJob(id)).toMatchObject({ status: 'assigned', attempt: 1, runnerId: claimers[k]!.runner.id });
    }
  });
}
