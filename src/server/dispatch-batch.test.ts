import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { AgentDefinition, JobAssignment, ServerToRunner } from '../protocol/index.js';
import { silentLogger } from '../core/log.js';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import type { AgentRegistry } from './agents.js';
import { Dispatcher } from './dispatcher.js';
import { newJobInPage } from './dispatch-new-job.js';
import { EffortSettings } from './effort-cache.js';
import { EventBus } from './event-bus.js';
import type { RunnerConnection, RunnerHub } from './hub.js';

// The dispatcher's batch path (issue 5 benchmark): one pass claims for every free runner in
// one store call, kicks of one event-loop turn share one pass, and a claim that does not take
// leaves its runner free for a follow-up pass.

const dir = mkdtempSync(join(tmpdir(), 'flotilla-dispatch-batch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const AGENT = { name: 'noop', version: '1', harness: 'command', holds: 'workspace' } as unknown as AgentDefinition;
const agents = { get: () => AGENT, list: () => [AGENT], forJob: () => AGENT, refresh: async () => undefined } as unknown as AgentRegistry;

/** A connected runner that records what it is sent (capacity 1, no labels). */
function fakeConn(runnerId: number, name: string): RunnerConnection & { got: JobAssignment[] } {
  const got: JobAssignment[] = [];
  return {
    runnerId,
    name,
    labels: {},
    capacity: 1,
    browserSlots: 1,
    ready: true,
    holdUntil: 0,
    got,
    async send(msg: ServerToRunner) {
      if (msg.type === 'job.assign') got.push(msg.assignment);
      return true;
    },
  };
}

/** `store` with a count of calls per method, and an optional hook after a method resolves. */
function counted(store: Store, after?: (method: string) => Promise<void>): { store: Store; calls: Map<string, unknown[][]> } {
  const calls = new Map<string, unknown[][]>();
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      return async (...args: unknown[]) => {
        calls.set(prop, [...(calls.get(prop) ?? []), args]);
        const out = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await after?.(prop);
        return out;
      };
    },
  });
  return { store: proxy, calls };
}

async function setup(name: string, runners: number, jobs: number, after?: (method: string, store: Store) => Promise<void>) {
  const base = await openSqliteStore(join(dir, name));
  const now = Date.now();
  const conns: ReturnType<typeof fakeConn>[] = [];
  for (let i = 0; i < runners; i++) {
    const r = await base.createRunner({ name: `r${i}`, labels: {}, capacity: 1, credentialHash: `${name}${i}`.padEnd(64, '0'), now });
    conns.push(fakeConn(r.id, r.name));
  }
  const ids: number[] = [];
  for (let i = 0; i < jobs; i++) ids.push((await base.createJob({ parentId: null, agent: 'noop', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now })).id);
  const { store, calls } = counted(base, after && ((m) => after(m, base)));
  const hub = { connections: () => conns, applyOwnerLimits: () => undefined } as unknown as RunnerHub;
  const d = new Dispatcher({ store, hub, agents, bus: new EventBus(), effort: new EffortSettings(store), log: silentLogger, now: Date.now });
  return { base, conns, ids, calls, d };
}

it('one pass gives the 3 oldest of 5 queued jobs to 3 free runners in one batch claim, each with one assigned event', async () => {
  const { base, conns, ids, calls, d } = await setup('one-pass', 3, 5);
  try {
    d.kick();
    d.kick(); // same turn: the same pass
    await d.idle();
    expect(calls.get('listDispatchState')?.length).toBe(1); // one pass for both kicks
    expect(calls.get('claimJobsById')?.length).toBe(1);
    expect((calls.get('claimJobsById')![0]![0] as unknown[]).length).toBe(3);
    expect(calls.has('claimJobById')).toBe(false);
    const given = conns.flatMap((c) => c.got.map((a) => a.jobId)).sort((a, b) => a - b);
    expect(given).toEqual(ids.slice(0, 3));
    for (const c of conns) expect(c.got.length).toBe(1);
    for (const id of ids.slice(0, 3)) {
      const evs = await base.listEvents(id, 0, 10);
      expect(evs.map((e) => (e.data as { status: string }).status)).toEqual(['assigned']);
      expect(await base.getJob(id)).toMatchObject({ status: 'assigned', attempt: 1 });
    }
    for (const id of ids.slice(3)) expect((await base.getJob(id))?.status).toBe('queued');

    // Two jobs end in the same turn: both freed runners are served by one more pass and claim.
    const done = conns.slice(0, 2).map((c) => c.got[0]!);
    for (const a of done) await base.transitionJob(a.jobId, a.attempt, ['assigned'], 'succeeded', Date.now());
    d.kick();
    d.kick();
    await d.idle();
    expect(calls.get('listDispatchState')?.length).toBe(2);
    expect(calls.get('claimJobsById')?.length).toBe(2);
    expect((calls.get('claimJobsById')![1]![0] as unknown[]).length).toBe(2);
    expect(conns.slice(0, 2).map((c) => c.got[1]?.jobId).sort((a, b) => a! - b!)).toEqual(ids.slice(3));
    expect(conns[2]!.got.length).toBe(1); // still busy with its first job
  } finally {
    await d.stop();
    await base.close();
  }
});

it('a claim that does not take (job cancelled after the queue was read) leaves its runner free for the next job', async () => {
  let cancelled = 0;
  const { base, conns, ids, d } = await setup('lost-claim', 1, 2, async (method, store) => {
    // Right after the first read of the queue, the head job is cancelled elsewhere.
    if (method !== 'listDispatchState' || cancelled) return;
    cancelled = ids[0]!;
    await store.transitionJob(ids[0]!, null, ['queued'], 'cancelled', Date.now(), { endReason: 'cancelled' });
  });
  try {
    d.kick();
    await d.idle();
    expect(cancelled).toBe(ids[0]);
    expect(conns[0]!.got.map((a) => a.jobId)).toEqual([ids[1]]);
    expect(await base.getJob(ids[0]!)).toMatchObject({ status: 'cancelled', attempt: 0 });
    expect(await base.listEvents(ids[0]!, 0, 10)).toEqual([]);
  } finally {
    await d.stop();
    await base.close();
  }
});

it('a `capacity` kick after a pass that claimed the whole queue reads nothing; a `work` kick, or one after a pass that left jobs queued, passes', async () => {
  const { base, conns, ids, calls, d } = await setup('kick-reasons', 2, 3);
  const passes = () => calls.get('listDispatchState')?.length ?? 0;
  try {
    d.kick();
    await d.idle();
    expect(passes()).toBe(1);
    expect(conns.map((c) => c.got.length)).toEqual([1, 1]); // job 3 left queued: not drained
    // A runner's job ends: `capacity`, and the queue was not drained, so a pass gives it job 3.
    const first = conns[0]!.got[0]!;
    await base.transitionJob(first.jobId, first.attempt, ['assigned'], 'succeeded', Date.now());
    d.kick('capacity');
    await d.idle();
    expect(passes()).toBe(2);
    expect(conns[0]!.got.map((a) => a.jobId)).toEqual([ids[0], ids[2]]);
    // That pass claimed every queued job it read: the next `capacity` kick is no pass at all.
    const second = conns[1]!.got[0]!;
    await base.transitionJob(second.jobId, second.attempt, ['assigned'], 'succeeded', Date.now());
    d.kick('capacity');
    await d.idle();
    expect(passes()).toBe(2);
    // A job queued here kicks with `work` (the default): a pass, and the free runner gets it.
    const job = await base.createJob({ parentId: null, agent: 'noop', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now: Date.now() });
    d.kick();
    await d.idle();
    expect(passes()).toBe(3);
    expect(conns[1]!.got.map((a) => a.jobId)).toEqual([ids[1], job.id]);
  } finally {
    await d.stop();
    await base.close();
  }
});

it('a `work` kick during a pass that drains the queue still gets its own pass (the job may have been queued after the read)', async () => {
  const ref: { d?: Dispatcher } = {};
  let late = 0;
  const made = await setup('kick-during-pass', 2, 1, async (method, store) => {
    // Right after the pass read the queue, a job is created here and kicks.
    if (method !== 'listDispatchState' || late) return;
    late = (await store.createJob({ parentId: null, agent: 'noop', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now: Date.now() })).id;
    ref.d!.kick();
    ref.d!.kick('capacity');
  });
  const d = (ref.d = made.d);
  try {
    d.kick();
    await d.idle();
    expect(made.calls.get('listDispatchState')?.length).toBe(2);
    expect(made.conns.flatMap((c) => c.got.map((a) => a.jobId)).sort((a, b) => a - b)).toEqual([made.ids[0], late]);
  } finally {
    await d.stop();
    await made.base.close();
  }
});

const NEW_JOB = { parentId: null, agent: 'noop', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1 } as const;
const QUEUED = { type: 'status', data: { status: 'queued', message: 'waiting for a runner' } } as const;

it('createJob on an idle dispatcher: stored already assigned to a free, not held runner, in one write, with both events published', async () => {
  const { base, conns, calls, d } = await setup('create-fast', 2, 0);
  const bus = (d as unknown as { o: { bus: EventBus } }).o.bus;
  const seen: string[] = [];
  bus.tap((_, evs) => seen.push(...evs.map((e) => `${e.seq}:${(e.data as { status: string }).status}`)));
  try {
    await base.setRunnerHold(conns[0]!.runnerId, { until: Date.now() + 60_000, reason: 'maintenance', kind: 'manual' });
    const made = await d.createJob({ ...NEW_JOB, now: Date.now() }, QUEUED, AGENT);
    await d.idle();
    expect(made.job).toMatchObject({ status: 'assigned', attempt: 1, runnerId: conns[1]!.runnerId });
    expect(calls.get('listDispatchState')?.length).toBe(1);
    expect(calls.get('createRootJobWithEvent')?.length).toBe(1);
    expect(calls.has('claimJobsById')).toBe(false);
    expect(conns[0]!.got).toEqual([]);
    expect(conns[1]!.got).toMatchObject([{ jobId: made.job.id, attempt: 1 }]);
    expect(seen).toEqual(['1:queued', '2:assigned']);
    expect((await base.listEvents(made.job.id, 0, 10)).map((e) => (e.data as { message: string }).message)).toEqual(['waiting for a runner', 'assigned to runner r1']);
    // The job was the only one queued and it was sent: a runner's `capacity` kick reads nothing.
    d.kick('capacity');
    await d.idle();
    expect(calls.get('listDispatchState')?.length).toBe(1);
  } finally {
    await d.stop();
    await base.close();
  }
});

it('createJob behind an older queued job: stored queued, and the pass over the same read gives the runner the older one first', async () => {
  const { base, conns, ids, calls, d } = await setup('create-behind', 1, 1);
  try {
    const made = await d.createJob({ ...NEW_JOB, now: Date.now() }, QUEUED, AGENT);
    await d.idle();
    expect(made.job).toMatchObject({ status: 'queued', attempt: 0 });
    expect(calls.get('listDispatchState')?.length).toBe(1); // the pass used the read made before the job
    expect(conns[0]!.got.map((a) => a.jobId)).toEqual([ids[0]]);
    expect((await base.getJob(made.job.id))?.status).toBe('queued');
    // The runner is free again: the new job goes next (not drained, so the capacity kick passes).
    const a = conns[0]!.got[0]!;
    await base.transitionJob(a.jobId, a.attempt, ['assigned'], 'succeeded', Date.now());
    d.kick('capacity');
    await d.idle();
    expect(conns[0]!.got.map((x) => x.jobId)).toEqual([ids[0], made.job.id]);
  } finally {
    await d.stop();
    await base.close();
  }
});

it('createJob with no runner that fits (labels), and while a pass runs: stored queued; the running pass is followed by one that assigns it', async () => {
  const during: { made?: Promise<{ job: { id: number } }>; d?: Dispatcher } = {};
  const made = await setup('create-busy', 1, 0, async (method) => {
    // While the pass below reads, a job is created: the dispatcher is busy, so it is stored queued and kicks.
    if (method === 'listDispatchState' && !during.made) during.made = during.d!.createJob({ ...NEW_JOB, now: Date.now() }, QUEUED, AGENT);
  });
  const d = (during.d = made.d);
  try {
    const gpu = await d.createJob({ ...NEW_JOB, selector: { gpu: 'true' }, now: Date.now() }, QUEUED, AGENT);
    await d.idle();
    expect(gpu.job).toMatchObject({ status: 'queued', attempt: 0, runnerId: null });
    const busy = await during.made!;
    await d.idle();
    expect(made.conns[0]!.got.map((a) => a.jobId)).toEqual([busy.job.id]);
    expect((await made.base.getJob(gpu.job.id))?.status).toBe('queued');
    expect(made.calls.has('claimJobsById')).toBe(true); // the busy one went through a pass's claim
  } finally {
    await d.stop();
    await made.base.close();
  }
});

it('newJobInPage: the new job in dispatch order, once; past a full page it is left for the next page', () => {
  const ref = (id: number, priority = 0) => ({ id, priority, selector: {}, pinnedRunnerId: null, agent: 'noop', agentVersion: '1', workspaceJobId: null });
  const st = (ids: Array<[number, number]>) => ({ queue: ids.map(([id, p]) => ref(id, p)), heldRunnerIds: [7], active: [], taskSlots: [], ownerLimits: [] });
  expect(newJobInPage(st([]), ref(9), 3).queue.map((q) => q.id)).toEqual([9]);
  expect(newJobInPage(st([]), ref(9), 3).heldRunnerIds).toEqual([7]);
  // Already read (the read came after the commit): unchanged.
  expect(newJobInPage(st([[4, 0], [9, 0]]), ref(9), 3).queue.map((q) => q.id)).toEqual([4, 9]);
  // Priority first, then id.
  expect(newJobInPage(st([[4, 0], [5, 0]]), ref(9, 2), 3).queue.map((q) => q.id)).toEqual([9, 4, 5]);
  // A full page: the new job pushes the last one out (read again after the new last)...
  expect(newJobInPage(st([[4, 1], [5, 0], [6, 0]]), ref(9, 1), 3).queue.map((q) => q.id)).toEqual([4, 9, 5]);
  // ...or, sorting after all of it, is not added.
  expect(newJobInPage(st([[4, 0], [5, 0], [6, 0]]), ref(9, 0), 3).queue.map((q) => q.id)).toEqual([4, 5, 6]);
});

it('a whole-runner job keeps the runner closest to empty from younger jobs, and gets it once it drains', async () => {
  const base = await openSqliteStore(join(dir, 'whole-runner'));
  const WHOLE = { name: 'whole', version: '1', harness: 'command', holds: 'runner' } as unknown as AgentDefinition;
  const byName = (n: string) => (n === 'whole' ? WHOLE : AGENT);
  const twoAgents = { get: byName, list: () => [AGENT, WHOLE], forJob: byName, refresh: async () => undefined } as unknown as AgentRegistry;
  const now = Date.now();
  const r = await base.createRunner({ name: 'big', labels: {}, capacity: 2, credentialHash: 'w'.repeat(64), now });
  const conn = { ...fakeConn(r.id, r.name), capacity: 2 };
  const job = (agent: string) => base.createJob({ parentId: null, agent, agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now });
  const first = await job('noop'); // running on the runner already
  const whole = await job('whole');
  const small = await job('noop'); // younger than the whole-runner job
  const hub = { connections: () => [conn], applyOwnerLimits: () => undefined } as unknown as RunnerHub;
  const d = new Dispatcher({ store: base, hub, agents: twoAgents, bus: new EventBus(), effort: new EffortSettings(base), log: silentLogger, now: Date.now });
  try {
    await base.claimJobById(first.id, { id: r.id, labels: {} }, 'f'.repeat(64), now, 'workspace');
    d.kick();
    await d.idle();
    // One slot is free, but the small job must not take it: the whole-runner job waits for the runner to drain.
    expect(conn.got).toEqual([]);
    expect((await base.getJob(small.id))?.status).toBe('queued');
    await base.transitionJob(first.id, 1, ['assigned'], 'succeeded', Date.now());
    d.kick('capacity');
    await d.idle();
    expect(conn.got.map((a) => a.jobId)).toEqual([whole.id]);
    expect((await base.getJob(small.id))?.status).toBe('queued'); // the runner is held whole now
  } finally {
    await d.stop();
    await base.close();
  }
});

it('a job created while another one is being placed from an earlier read (older jobs queued) still gets a pass of its own', async () => {
  const during: { d?: Dispatcher; made?: Promise<{ job: { id: number } }> } = {};
  const made = await setup('create-race', 3, 1, async (method) => {
    // Right after the read createJob(A) placed A from, job B is created: the dispatcher is busy, B is stored queued and kicks.
    if (method === 'listDispatchState' && !during.made) during.made = during.d!.createJob({ ...NEW_JOB, now: Date.now() }, QUEUED, AGENT);
  });
  const d = (during.d = made.d);
  try {
    const a = await d.createJob({ ...NEW_JOB, now: Date.now() }, QUEUED, AGENT);
    const b = await during.made!;
    await d.idle();
    const given = made.conns.flatMap((c) => c.got.map((x) => x.jobId)).sort((x, y) => x - y);
    expect(given).toEqual([made.ids[0]!, a.job.id, b.job.id].sort((x, y) => x - y));
  } finally {
    await d.stop();
    await made.base.close();
  }
});
