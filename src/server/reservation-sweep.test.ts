import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { hashToken } from '../core/tokens.js';
import { openStore } from '../store/open.js';
import { EventBus } from './event-bus.js';
import { Sweeper } from './sweeper.js';
import { reserve } from '../gateway/budget.js';

describe('a gateway that dies mid-call', () => {
  it("leaves a reservation that the control plane's sweeper gives back after its expiry: the tree's budget is whole again", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-res-sweep-'));
    const store = await openStore({ dataDir: dir });
    try {
      const T0 = 1_800_000_000_000;
      const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now: T0 });
      const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now: T0 });
      await store.claimJob({ id: runner.id, labels: {} }, hashToken('flj_t'), T0);
      const running = (await store.findJobByTokenHash(hashToken('flj_t')))!;
      // The "dying" gateway reserves $0.95 with a 60 s expiry and never settles.
      const held = await reserve(store, running, 950_000, T0, 60_000);
      expect('refused' in held).toBe(false);
      // While it is held, a $0.10 call does not fit.
      const refused = await reserve(store, running, 100_000, T0 + 1);
      expect('refused' in refused && refused.refused).toMatch(/\$0\.050000 left/);
      let now = T0 + 59_999;
      const sweeper = new Sweeper({ store, bus: new EventBus(), log: silentLogger, now: () => now, timeoutMs: 20_000, intervalMs: 1000, startedAt: T0 });
      await sweeper.sweepOnce();
      expect(await store.getTreeBudget(job.id, now)).toMatchObject({ reservedMicros: 950_000, remainingMicros: 50_000 });
      now += 1; // expired
      await sweeper.sweepOnce();
      expect(await store.getTreeBudget(job.id, now)).toEqual({ rootId: job.id, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 1_000_000 });
      const again = await reserve(store, running, 1_000_000, now);
      expect('refused' in again).toBe(false);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
