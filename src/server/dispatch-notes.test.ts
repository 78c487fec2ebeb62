import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { AgentDefinition, JobAssignment, JobEvent, ServerToRunner } from '../protocol/index.js';
import { silentLogger } from '../core/log.js';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import type { AgentRegistry } from './agents.js';
import { WaitNotes } from './dispatch-notes.js';
import { Dispatcher } from './dispatcher.js';
import { EffortSettings } from './effort-cache.js';
import { EventBus } from './event-bus.js';
import type { RunnerConnection, RunnerHub } from './hub.js';
import { waitFor } from './test-helpers.js';

// The dispatcher's "why it waits" notes (dispatch-notes.ts): a round's notes are one store write,
// and a dispatch pass does not wait for them.

const dir = mkdtempSync(join(tmpdir(), 'flotilla-dispatch-notes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const AGENT = { name: 'noop', version: '1', harness: 'command', holds: 'workspace' } as unknown as AgentDefinition;
const agents = { get: () => AGENT, list: () => [AGENT], forJob: () => AGENT, refresh: async () => undefined } as unknown as AgentRegistry;

/** `store` with its calls recorded by method; `before` runs before a method is called. */
function counted(store: Store, before?: (method: string) => Promise<void>): { store: Store; calls: Map<string, unknown[][]> } {
  const calls = new Map<string, unknown[][]>();
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      return async (...args: unknown[]) => {
        calls.set(prop, [...(calls.get(prop) ?? []), args]);
        await before?.(prop);
        return (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

const newJob = (s: Store, selector: Record<string, string> = {}) =>
  s.createJob({ parentId: null, agent: 'noop', agentVersion: '1', input: {}, selector, priority: 0, budgetMicros: 1, now: Date.now() });
const statusOf = (e: JobEvent) => e.data as { status: string; message: string };

it('a round of notes is one store write, with no read per job: 30 jobs told "no runner registered yet", then all 30 told "busy" once runners register', async () => {
  const base = await openSqliteStore(join(dir, 'one-write'));
  try {
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push((await newJob(base)).id);
    const { store, calls } = counted(base);
    const bus = new EventBus();
    const published: number[] = [];
    bus.tap((jobId) => published.push(jobId));
    const hub = { connections: () => [] } as unknown as RunnerHub;
    const notes = new WaitNotes({ store, hub, agents, bus, log: silentLogger, now: Date.now });

    await notes.run();
    expect(calls.get('appendEventsIfQueued')?.length).toBe(1);
    expect(calls.has('getJob')).toBe(false);
    expect(calls.has('appendServerEvent')).toBe(false);
    for (const id of ids) expect((await base.listEvents(id, 0, 10)).map((e) => [e.seq, statusOf(e).status, statusOf(e).message])).toEqual([[1, 'queued', 'no runner registered yet, waiting']]);
    expect([...published].sort((a, b) => a - b)).toEqual(ids);

    // Two runners register (not connected): every job's reason changes at once; all 30 are told in one write.
    const now = Date.now();
    for (const name of ['r0', 'r1']) await base.createRunner({ name, labels: {}, capacity: 1, credentialHash: name.padEnd(64, '0'), now });
    await notes.run();
    expect(calls.get('appendEventsIfQueued')?.length).toBe(2);
    expect((calls.get('appendEventsIfQueued')![1]![0] as unknown[]).length).toBe(30);
    expect(calls.has('getJob')).toBe(false);
    for (const id of ids) expect((await base.listEvents(id, 1, 10)).map((e) => [e.seq, statusOf(e).message])).toEqual([[2, 'waiting for a runner that matches this job (r0, r1)']]);

    // Nothing changed: no write at all.
    await notes.run();
    expect(calls.get('appendEventsIfQueued')?.length).toBe(2);
  } finally {
    await base.close();
  }
});

it('a dispatch pass does not wait for its notes: a job queued while the note write hangs is assigned; stop() waits for the write', async () => {
  const base = await openSqliteStore(join(dir, 'not-awaited'));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const { store, calls } = counted(base, async (method) => {
    // The note's write, whichever way it is made (one at a time, before the batch method).
    if (method === 'appendEventsIfQueued' || method === 'appendServerEvent') await gate;
  });
  const writes = () => (calls.get('appendEventsIfQueued')?.length ?? 0) + (calls.get('appendServerEvent')?.length ?? 0);
  const r = await base.createRunner({ name: 'r0', labels: {}, capacity: 1, credentialHash: 'nw'.padEnd(64, '0'), now: Date.now() });
  const got: JobAssignment[] = [];
  const conn: RunnerConnection = {
    runnerId: r.id,
    name: r.name,
    labels: {},
    capacity: 1,
    browserSlots: 1,
    ready: true,
    holdUntil: 0,
    async send(msg: ServerToRunner) {
      if (msg.type === 'job.assign') got.push(msg.assignment);
      return true;
    },
  };
  const hub = { connections: () => [conn], applyOwnerLimits: () => undefined } as unknown as RunnerHub;
  const d = new Dispatcher({ store, hub, agents, bus: new EventBus(), effort: new EffortSettings(store), log: silentLogger, now: Date.now });
  let stopped = false;
  try {
    const unmatched = await newJob(base, { nosuch: 'x' });
    d.kick();
    // The pass found nothing to claim and started its notes, whose write now hangs.
    await waitFor(async () => writes(), (n) => n === 1, 3000);
    const job = await newJob(base);
    d.kick();
    await waitFor(async () => got.map((a) => a.jobId), (ids) => ids.length === 1, 3000);
    expect(got[0]!.jobId).toBe(job.id);
    expect(await base.listEvents(unmatched.id, 0, 10)).toEqual([]); // the note is still held up

    const stopping = d.stop().then(() => (stopped = true));
    await new Promise((res) => setTimeout(res, 50));
    expect(stopped).toBe(false); // waits for the round of notes
    release();
    await stopping;
    expect((await base.listEvents(unmatched.id, 0, 10)).map((e) => statusOf(e).message)).toEqual(['no runner matches nosuch=x, waiting']);
    expect((await base.listEvents(job.id, 0, 10)).map((e) => statusOf(e).status)).toEqual(['assigned']);
  } finally {
    release();
    if (!stopped) await d.stop();
    await base.close();
  }
});
