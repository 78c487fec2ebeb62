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
  const hub = { connections: () => conns } as unknown as RunnerHub;
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
