import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../core/log.js';
import { openStore } from '../../store/open.js';
import { openPostgresStore } from '../../store/postgres.js';
import { createTestDatabase } from '../../store/test-pg.js';
import type { Store } from '../../store/types.js';
import { AgentRegistry } from '../agents.js';
import type { Dispatcher } from '../dispatcher.js';
import { EventBus } from '../event-bus.js';
import type { RunnerHub } from '../hub.js';
import { TaskEngine } from './engine.js';

// The trailing wake survives a restart (the first pass of a new engine fires it) and two
// replicas firing it at once start ONE turn. Real stores (SQLite; PostgreSQL with two pools).

const pg = await createTestDatabase();
const dir = await mkdtemp(join(tmpdir(), 'flotilla-engine-'));
afterAll(async () => {
  await pg?.drop();
  await rm(dir, { recursive: true, force: true });
});
await mkdir(join(dir, 'agents', 'worker'), { recursive: true });
await writeFile(join(dir, 'agents', 'worker', 'agent.yaml'), 'name: worker\nharness: command\ncommand: ["true"]\n');
await writeFile(join(dir, 'agents', 'worker', 'prompt.md'), '{{input.taskPrompt}}');
const agents = await AgentRegistry.load([join(dir, 'agents')]);

function engine(store: Store, now: () => number): TaskEngine {
  const dispatcher = { kick() {} } as unknown as Dispatcher;
  const hub = { send: async () => false } as unknown as RunnerHub;
  return new TaskEngine({ store, agents, bus: new EventBus(), hub, dispatcher, log: silentLogger, now }, 60_000);
}

const T = 1_800_000_000_000;
const ev = (summary: string) => ({ receiverId: null, key: 'k', kind: 'alert.firing', actor: null, summary, occurredAt: T });

let n = 0;
const engines: Array<{ name: string; open: () => Promise<[Store, Store]> }> = [
  {
    name: 'SQLite',
    open: async () => {
      const s = await openStore({ dataDir: join(dir, `db${++n}`) });
      return [s, s];
    },
  },
  ...(pg
    ? [{ name: 'PostgreSQL', open: async (): Promise<[Store, Store]> => {
        const schema = `e${++n}`;
        const a = await openPostgresStore(pg.url, { schema, maxConnections: 2 });
        return [a, await openPostgresStore(pg.url, { schema, maxConnections: 2 })];
      } }]
    : []),
];

describe.each(engines)('task engine ($name)', ({ open }) => {
  it('a trailing wake left by a stopped server is fired by the next one, once across two replicas', async () => {
    const [a, b] = await open();
    try {
      let clock = T;
      const now = () => clock;
      const task = await a.createTask({ agent: 'worker', title: 'alerts', input: {}, keys: ['k'], coalesceMs: 1000, now: T });
      const first = engine(a, now);
      await a.addTaskEvent(task.id, ev('one'), T);
      expect(await first.onEvent(task.id)).toBe('woke');
      const turn1 = (await a.getTask(task.id))!.currentJobId!;
      clock = T + 100;
      await a.addTaskEvent(task.id, ev('two'), clock);
      expect(await first.onEvent(task.id)).toBe('coalesced');
      await a.addTaskEvent(task.id, ev('three'), clock);
      expect(await first.onEvent(task.id)).toBe('coalesced');
      await first.stop(); // the server goes away with a trailing wake pending
      await a.transitionJob(turn1, null, ['queued'], 'cancelled', clock, { endReason: 'cancelled' });
      clock = T + 1500; // past the window
      const [r1, r2] = [engine(a, now), engine(b, now)];
      await Promise.all([r1.tick(), r2.tick()]);
      await Promise.all([r1.tick(), r2.tick()]); // the pass that ends turn 1 may come first
      const t = (await a.getTask(task.id))!;
      expect(t.turn).toBe(2);
      expect(t.trailingDueAt).toBeNull();
      const job2 = (await a.getJob(t.currentJobId!))!;
      expect(String(job2.input.taskPrompt)).toContain('(2 events, oldest first):\n- [alert.firing] two');
      expect(String(job2.input.taskPrompt)).toContain('- [alert.firing] three');
      expect((await a.listJobs({ limit: 10 })).map((j) => j.id)).toEqual([job2.id, turn1]);
      await Promise.all([r1.stop(), r2.stop()]);
    } finally {
      await a.close();
      if (b !== a) await b.close();
    }
  });

  it('a task reopened while its cancelled turn is still ending runs its pending events once that turn ends (it stayed idle with the dead job for ever)', async () => {
    const [a, b] = await open();
    try {
      let clock = T;
      const now = () => clock;
      const task = await a.createTask({ agent: 'worker', title: 'issue 9', input: {}, keys: ['k'], coalesceMs: 1000, now: T });
      const e = engine(a, now);
      await a.addTaskEvent(task.id, ev('assigned'), T);
      expect(await e.onEvent(task.id)).toBe('woke');
      const turn1 = (await a.getTask(task.id))!.currentJobId!;
      // the issue is closed (the task completes; its turn is being cancelled, its process still
      // stopping), then reopened and commented on before that turn has ended
      clock = T + 100;
      await a.completeTask(task.id, clock);
      expect(await a.reopenTask(task.id, clock)).toMatchObject({ status: 'idle', currentJobId: turn1 });
      await a.addTaskEvent(task.id, ev('please act'), clock);
      await e.onEvent(task.id);
      // the turn ends; the next pass hands the pending events to a new turn
      clock = T + 5000;
      await a.transitionJob(turn1, null, ['queued'], 'cancelled', clock, { endReason: 'cancelled' });
      await e.tick();
      await e.tick();
      const t = (await a.getTask(task.id))!;
      expect({ status: t.status, turn: t.turn, pending: t.pendingEvents }).toEqual({ status: 'running', turn: 2, pending: 0 });
      expect(t.currentJobId).not.toBe(turn1);
      expect(String((await a.getJob(t.currentJobId!))!.input.taskPrompt)).toContain('please act');
      await e.stop();
    } finally {
      await a.close();
      if (b !== a) await b.close();
    }
  });
});
