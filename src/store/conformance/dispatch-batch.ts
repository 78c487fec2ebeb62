import { expect, it } from 'vitest';
import type { EventBody } from '../../protocol/index.js';
import type { NewJob } from '../types.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

const assigned = (runnerId: number, name: string): EventBody => ({ type: 'status', data: { status: 'assigned', message: `assigned to runner ${name}`, runnerId } });

const root = (over: Partial<NewJob> = {}): NewJob => ({
  parentId: null,
  agent: 'test-fixer',
  agentVersion: '3',
  input: { repo: 'examples/calc' },
  selector: { os: 'linux' },
  priority: 2,
  budgetMicros: 5_000_000,
  now: T,
  ...over,
});

/** The dispatch hot path (store/claim-batch.ts, job-enqueue.ts, dispatch-head.ts; issue 5 benchmark). */
export function dispatchBatchTests(h: Harness): void {
  it('createRootJobWithEvent: a queued root job (rootId = own id) and its event at seq 1, in one write', async () => {
    const s = await h.open();
    const first = await s.createRootJobWithEvent(root(), { type: 'status', data: { status: 'queued', message: 'waiting for a runner' } });
    const second = await s.createRootJobWithEvent(root({ priority: 0, selector: {}, retries: 2 }), { type: 'status', data: { status: 'queued', message: 'second' } });
    expect(first.job).toMatchObject({ parentId: null, rootId: first.job.id, status: 'queued', attempt: 0, agentVersion: '3', priority: 2, selector: { os: 'linux' }, budgetMicros: 5_000_000, createdAt: T });
    expect(second.job.id).toBeGreaterThan(first.job.id);
    expect(second.job.rootId).toBe(second.job.id);
    expect(second.job.retriesLeft).toBe(2);
    expect(first.event).toEqual({ jobId: first.job.id, seq: 1, type: 'status', data: { status: 'queued', message: 'waiting for a runner' }, at: '2027-01-15T08:00:00.000Z' });
    expect(await s.getJob(first.job.id)).toEqual(first.job);
    expect(await s.listEvents(first.job.id, 0, 10)).toEqual([first.event]);
    // Every optional field lands in its own column (a resumed run, pinned to its runner, with an effort tier).
    const r = await newRunner(s, {}, 'pin');
    const third = await s.createRootJobWithEvent(root({ resumeSessionId: 'sess-1', pinnedRunnerId: r.id, workspaceJobId: first.job.id, effortTier: 'high', input: { repo: 'x', n: 3 } }), { type: 'status', data: { status: 'queued', message: 'third' } });
    expect(third.job).toMatchObject({ resumeSessionId: 'sess-1', pinnedRunnerId: r.id, workspaceJobId: first.job.id, effortTier: 'high', input: { repo: 'x', n: 3 }, retriesLeft: 0, runnerId: null, sessionId: null, result: null, startedAt: null });
    expect(await s.getJob(third.job.id)).toEqual(third.job);
    // The next event of that job follows at seq 2.
    expect((await s.appendServerEvent(first.job.id, { type: 'status', data: { status: 'queued', message: 'x' } }, T + 1)).seq).toBe(2);
    await expect(s.createRootJobWithEvent(root({ parentId: first.job.id }), { type: 'status', data: { status: 'queued', message: 'x' } })).rejects.toThrow(/parentId must be null/);
  });

  it('createRootJobWithEvent with an assignment: stored assigned (attempt 1, runner, token, holds) with both events, in one write', async () => {
    const s = await h.open();
    const r = await newRunner(s, { os: 'linux' }, 'fast');
    const assigned = { type: 'status', data: { status: 'assigned', message: 'assigned to runner fast', runnerId: r.id } } as const;
    const tokenHash = fakeHash('new');
    const made = await s.createRootJobWithEvent(root(), { type: 'status', data: { status: 'queued', message: 'waiting for a runner' } }, { runnerId: r.id, tokenHash, holds: 'browser', event: assigned });
    expect(made.job).toMatchObject({ rootId: made.job.id, status: 'assigned', attempt: 1, runnerId: r.id, assignedAt: T, createdAt: T, startedAt: null });
    expect(await s.getJob(made.job.id)).toEqual(made.job);
    expect(made.event).toEqual({ jobId: made.job.id, seq: 1, type: 'status', data: { status: 'queued', message: 'waiting for a runner' }, at: '2027-01-15T08:00:00.000Z' });
    expect(made.assigned).toEqual({ jobId: made.job.id, seq: 2, ...assigned, at: '2027-01-15T08:00:00.000Z' });
    expect(await s.listEvents(made.job.id, 0, 10)).toEqual([made.event, made.assigned]);
    // It holds its runner like a claimed job, its token is live, and it runs as attempt 1.
    expect(await s.listActiveAssignments()).toEqual([{ jobId: made.job.id, runnerId: r.id, attempt: 1, status: 'assigned', holds: 'browser', workspace: made.job.id }]);
    expect((await s.findJobByTokenHash(tokenHash))?.id).toBe(made.job.id);
    expect(await s.transitionJob(made.job.id, 1, ['assigned'], 'running', T + 1, { startedAt: T + 1 })).toBeTruthy();
    expect((await s.appendServerEvent(made.job.id, { type: 'status', data: { status: 'running', message: 'x' } }, T + 1)).seq).toBe(3);
    // Without one, nothing of it: queued, attempt 0, no second event.
    const plain = await s.createRootJobWithEvent(root(), { type: 'status', data: { status: 'queued', message: 'w' } });
    expect(plain.assigned).toBeUndefined();
    expect(plain.job).toMatchObject({ status: 'queued', attempt: 0, runnerId: null, assignedAt: null });
  });

  it('claimJobsById: claims what still fits, with its event at the next seq, in claims order', async () => {
    const s = await h.open();
    const linux = await newRunner(s, { os: 'linux' }, 'lin');
    const any = await newRunner(s, {}, 'any');
    const A = await newJob(s, { selector: { os: 'linux' } });
    const B = await newJob(s, { pinnedRunnerId: any.id });
    const C = await newJob(s);
    const D = await newJob(s);
    const E = await newJob(s, { selector: { os: 'mac' } });
    await s.appendServerEvent(C.id, { type: 'status', data: { status: 'queued', message: 'waiting' } }, T);
    await s.claimJobById(D.id, { id: any.id, labels: {} }, fakeHash('d'), T); // D is no longer queued
    const tokens = [fakeHash('a'), fakeHash('b'), fakeHash('c'), fakeHash('d2'), fakeHash('e')];
    const got = await s.claimJobsById(
      [
        { jobId: C.id, runner: { id: any.id, labels: {} }, tokenHash: tokens[2]!, holds: 'runner', event: assigned(any.id, 'any') },
        { jobId: B.id, runner: { id: linux.id, labels: { os: 'linux' } }, tokenHash: tokens[1]!, holds: 'workspace', event: assigned(linux.id, 'lin') },
        { jobId: A.id, runner: { id: linux.id, labels: { os: 'linux' } }, tokenHash: tokens[0]!, holds: 'workspace', event: assigned(linux.id, 'lin') },
        { jobId: D.id, runner: { id: linux.id, labels: { os: 'linux' } }, tokenHash: tokens[3]!, holds: 'workspace', event: assigned(linux.id, 'lin') },
        { jobId: E.id, runner: { id: linux.id, labels: { os: 'linux' } }, tokenHash: tokens[4]!, holds: 'workspace', event: assigned(linux.id, 'lin') },
      ],
      T + 7,
    );
    // B is pinned to the other runner, D was taken, E wants os=mac: only C and A, in claims order.
    expect(got.map((g) => g.job.id)).toEqual([C.id, A.id]);
    expect(got[0]!.job).toMatchObject({ status: 'assigned', attempt: 1, runnerId: any.id, assignedAt: T + 7 });
    expect(got[1]!.job).toMatchObject({ status: 'assigned', attempt: 1, runnerId: linux.id, assignedAt: T + 7 });
    // C already had one event: its assigned event is seq 2; A had none: seq 1.
    expect(got[0]!.event).toEqual({ jobId: C.id, seq: 2, type: 'status', data: { status: 'assigned', message: 'assigned to runner any', runnerId: any.id }, at: '2027-01-15T08:00:00.007Z' });
    expect(got[1]!.event.seq).toBe(1);
    // What each holds on its runner is stored (capacity is counted from it).
    const holds = new Map((await s.listActiveAssignments()).map((a) => [a.jobId, a.holds]));
    expect([holds.get(C.id), holds.get(A.id), holds.get(D.id)]).toEqual(['runner', 'workspace', 'workspace']);
    expect((await s.listEvents(A.id, 0, 10)).map((e) => e.seq)).toEqual([1]);
    expect((await s.findJobByTokenHash(tokens[2]!))?.id).toBe(C.id);
    expect((await s.findJobByTokenHash(tokens[0]!))?.id).toBe(A.id);
    expect(await s.findJobByTokenHash(tokens[1]!)).toBeNull();
    for (const left of [B, E]) expect(await s.getJob(left.id)).toMatchObject({ status: 'queued', attempt: 0, runnerId: null });
    expect(await s.listEvents(B.id, 0, 10)).toEqual([]);
    expect(await s.claimJobsById([], T)).toEqual([]);
    await expect(
      s.claimJobsById(
        [
          { jobId: B.id, runner: { id: any.id, labels: {} }, tokenHash: fakeHash('x'), holds: 'workspace', event: assigned(any.id, 'any') },
          { jobId: B.id, runner: { id: any.id, labels: {} }, tokenHash: fakeHash('y'), holds: 'workspace', event: assigned(any.id, 'any') },
        ],
        T,
      ),
    ).rejects.toThrow(/appears twice/);
    expect((await s.getJob(B.id))?.status).toBe('queued');
  });

  it('claimJobsById under concurrency: 4 instances batch-claim the same 30 jobs; each is claimed once with one event', async () => {
    const s = await h.open();
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push((await newJob(s, { priority: i % 3 })).id);
    const claimers = [];
    for (let k = 0; k < 4; k++) claimers.push({ store: k === 0 ? s : await h.another(s), runner: await newRunner(s, {}, `r${k}`) });
    const per = await Promise.all(
      claimers.map(async ({ store, runner }) => {
        const mine: number[] = [];
        // Batches of 7 in a different order per claimer, so batches overlap in every way.
        const order = runner.id % 2 ? [...ids] : [...ids].reverse();
        for (let i = 0; i < order.length; i += 7) {
          const batch = order.slice(i, i + 7).map((jobId) => ({ jobId, runner: { id: runner.id, labels: {} }, tokenHash: fakeHash('t'), holds: 'workspace' as const, event: assigned(runner.id, runner.name) }));
          for (const g of await store.claimJobsById(batch, T + 1)) {
            expect(g.job.runnerId).toBe(runner.id);
            mine.push(g.job.id);
          }
        }
        return mine;
      }),
    );
    // A claim skipped because another instance held the row lock stays queued: claim leftovers.
    for (const id of ids) {
      if ((await s.getJob(id))?.status !== 'queued') continue;
      const g = await s.claimJobsById([{ jobId: id, runner: { id: claimers[0]!.runner.id, labels: {} }, tokenHash: fakeHash('t'), holds: 'workspace', event: assigned(claimers[0]!.runner.id, 'r0') }], T + 2);
      per[0]!.push(...g.map((x) => x.job.id));
    }
    const all = per.flat();
    expect(all.length).toBe(30);
    expect([...new Set(all)].sort((a, b) => a - b)).toEqual(ids);
    for (const id of ids) {
      expect((await s.getJob(id))?.attempt).toBe(1);
      expect((await s.listEvents(id, 0, 10)).map((e) => e.seq)).toEqual([1]);
    }
  });

  it('listDispatchHead: the queue in dispatch order with agent versions, and the runners held at now', async () => {
    const s = await h.open();
    const r1 = await newRunner(s, {}, 'r1');
    const r2 = await newRunner(s, {}, 'r2');
    const r3 = await newRunner(s, {}, 'r3');
    expect(await s.listDispatchHead(10, T)).toEqual({ queue: [], heldRunnerIds: [] });
    await s.setRunnerHold(r3.id, { until: T + 100, reason: 'setup', kind: 'manual' });
    await s.setRunnerHold(r1.id, { until: T + 50, reason: 'x', kind: 'manual' });
    await s.setRunnerHold(r2.id, { until: T, reason: 'ended', kind: 'manual' });
    const a = await newJob(s, { priority: 0, agentVersion: '7' });
    const b = await newJob(s, { priority: 5, selector: { os: 'linux' }, pinnedRunnerId: r2.id });
    const c = await newJob(s, { priority: 0, workspaceJobId: a.id });
    const head = await s.listDispatchHead(2, T);
    expect(head.queue).toEqual([
      { id: b.id, priority: 5, selector: { os: 'linux' }, pinnedRunnerId: r2.id, agent: 'test-fixer', agentVersion: '1', workspaceJobId: null },
      { id: a.id, priority: 0, selector: {}, pinnedRunnerId: null, agent: 'test-fixer', agentVersion: '7', workspaceJobId: null },
    ]);
    // r2's hold ends at T (not after it); r1 and r3 are held, ascending.
    expect(head.heldRunnerIds).toEqual([r1.id, r3.id]);
    expect((await s.listDispatchHead(10, T + 60)).heldRunnerIds).toEqual([r3.id]);
    // A revoked runner takes nothing either (its socket may live on at another replica for a moment).
    await s.revokeRunner(r2.id, T + 60);
    expect((await s.listDispatchHead(10, T + 60)).heldRunnerIds).toEqual([r2.id, r3.id]);
    expect((await s.listDispatchState(10, T + 60)).heldRunnerIds).toEqual([r2.id, r3.id]);
    // b was queued to resume a session kept on r2: lost with the revoke (store revokeRunner)
    expect((await s.listDispatchHead(10, T)).queue.map((q) => q.id)).toEqual([a.id, c.id]);
    expect(await s.getJob(b.id)).toMatchObject({ status: 'lost', endReason: 'runner_revoked' });
    await expect(s.listDispatchHead(0, T)).rejects.toThrow(/limit/);
  });
  it('listDispatchState: the head of the queue with the holds, the live assignments and the kept task slots, as the three reads give them', async () => {
    const s = await h.open();
    const r1 = await newRunner(s, {}, 'r1');
    const r2 = await newRunner(s, {}, 'r2');
    expect(await s.listDispatchState(10, T)).toEqual({ queue: [], heldRunnerIds: [], active: [], taskSlots: [], ownerLimits: [] });
    await s.setRunnerHold(r2.id, { until: T + 100, reason: 'setup', kind: 'manual' });
    // The holds come with an empty queue too (a new job is placed from a read made before it: server/dispatch-new-job.ts).
    expect(await s.listDispatchState(10, T)).toEqual({ queue: [], heldRunnerIds: [r2.id], active: [], taskSlots: [], ownerLimits: [] });
    const a = await newJob(s, { priority: 0 });
    const b = await newJob(s, { priority: 3, selector: { os: 'linux' } });
    const c = await newJob(s, { priority: 0, workspaceJobId: a.id });
    const d = await newJob(s, { priority: 0 });
    // d is assigned to r1 (holds browser), then running; c stays queued behind a.
    await s.claimJobById(d.id, { id: r1.id, labels: {} }, fakeHash('d'), T, 'browser');
    await s.transitionJob(d.id, 1, ['assigned'], 'running', T + 1, { startedAt: T + 1 });
    // A task keeping r1's slot for workspace 77 until T + 500; another whose slot has ended.
    const t1 = await s.createTask({ agent: 'fixer', title: 'kept', input: {}, keys: [], coalesceMs: 0, now: T });
    const t2 = await s.createTask({ agent: 'fixer', title: 'ended', input: {}, keys: [], coalesceMs: 0, now: T });
    await s.updateTask(t1.id, null, { status: 'idle', runnerId: r1.id, workspaceJobId: 77, slotUntil: T + 500 }, T);
    await s.updateTask(t2.id, null, { status: 'idle', runnerId: r1.id, workspaceJobId: 78, slotUntil: T }, T);
    const st = await s.listDispatchState(2, T);
    expect(st.queue.map((q) => [q.id, q.priority])).toEqual([
      [b.id, 3],
      [a.id, 0],
    ]);
    expect(st.queue[0]).toEqual({ id: b.id, priority: 3, selector: { os: 'linux' }, pinnedRunnerId: null, agent: 'test-fixer', agentVersion: '1', workspaceJobId: null });
    expect(st.heldRunnerIds).toEqual([r2.id]);
    expect(st.active).toEqual([{ jobId: d.id, runnerId: r1.id, attempt: 1, status: 'running', holds: 'browser', workspace: d.id }]);
    expect(st.taskSlots).toEqual([{ taskId: t1.id, runnerId: r1.id, workspace: 77, until: T + 500 }]);
    // The same as the separate reads.
    expect(st).toEqual({ ...(await s.listDispatchHead(2, T)), active: await s.listActiveAssignments(), taskSlots: await s.listTaskSlots(T), ownerLimits: [] });
    // Owners' capacity settings (set through any replica), by runner id; a cleared one is gone.
    const r3 = await newRunner(s, {}, 'r3');
    await s.setRunnerCapacity(r3.id, { capacity: 3 });
    await s.setRunnerCapacity(r2.id, { capacity: 2, browserSlots: 1 });
    expect((await s.listDispatchState(2, T)).ownerLimits).toEqual([
      { runnerId: r2.id, capacity: 2, browserSlots: 1 },
      { runnerId: r3.id, capacity: 3, browserSlots: null },
    ]);
    await s.setRunnerCapacity(r3.id, { capacity: null });
    expect((await s.listDispatchState(2, T)).ownerLimits).toEqual([{ runnerId: r2.id, capacity: 2, browserSlots: 1 }]);
    expect((await s.listDispatchState(10, T)).queue.map((q) => q.id)).toEqual([b.id, a.id, c.id]);
    // Past the hold and the slot.
    expect(await s.listDispatchState(10, T + 500)).toMatchObject({ heldRunnerIds: [], taskSlots: [] });
    await expect(s.listDispatchState(0, T)).rejects.toThrow(/limit/);
  });
}
