import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { openSqliteStore } from '../store/open.js';
import type { AgentRegistry } from './agents.js';
import { budgetPauser } from './budget-pause.js';
import { EventBus } from './event-bus.js';

const dir = mkdtempSync(join(tmpdir(), 'flotilla-pause-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('pauses a running job unless its agent says onBudgetExhausted: fail; leaves a status event', async () => {
  const store = await openSqliteStore(join(dir, 'db'));
  try {
    const now = Date.now();
    const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 2, credentialHash: 'c'.repeat(64), now });
    const mk = async (agent: string, hash: string) => {
      const j = await store.createJob({ parentId: null, agent, agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now });
      await store.claimJobById(j.id, { id: runner.id, labels: {} }, hash, now);
      return (await store.transitionJob(j.id, 1, ['assigned'], 'running', now))!;
    };
    const pausing = await mk('pauser', 'a'.repeat(64));
    const failing = await mk('failer', 'b'.repeat(64));
    const agents = { get: (name: string) => ({ onBudgetExhausted: name === 'failer' ? 'fail' : 'pause' }) } as unknown as AgentRegistry;
    const hook = budgetPauser({ store, agents, bus: new EventBus(), log: silentLogger, now: () => now });
    await hook(pausing, 'budget exhausted: job tree 1 ...');
    await hook(failing, 'budget exhausted: job tree 2 ...');
    expect(await store.getJob(pausing.id)).toMatchObject({ status: 'paused', endReason: 'budget', error: 'budget exhausted: job tree 1 ...' });
    expect(await store.getJob(failing.id)).toMatchObject({ status: 'running' }); // the runner's failed/budget report ends it
    const evs = await store.listEvents(pausing.id, 0, 10);
    expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'paused', message: 'budget exhausted: job tree 1 ...' } });
  } finally {
    await store.close();
  }
});
