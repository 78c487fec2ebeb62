import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from './open.js';
import type { Store } from './types.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
const T = 1_800_000_000_000;

async function running(): Promise<{ s: Store; jobId: number; hash: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-fast-'));
  dirs.push(dir);
  const s = await openStore({ dataDir: path.join(dir, 'data') });
  const runner = await s.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now: T });
  const job = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now: T });
  const hash = 'a'.repeat(64);
  await s.claimJob({ id: runner.id, labels: {} }, hash, T);
  await s.transitionJob(job.id, 1, ['assigned'], 'running', T, { startedAt: T });
  return { s, jobId: job.id, hash };
}

describe('SQLite fast paths (sqlite-fast.ts)', () => {
  it('a cached job token is refused the moment its job is cancelled or paused for budget', async () => {
    const a = await running();
    expect((await a.s.findJobByTokenHash(a.hash))?.id).toBe(a.jobId);
    expect((await a.s.findJobByTokenHash(a.hash))?.status).toBe('running'); // cached
    await a.s.transitionJob(a.jobId, 1, ['running'], 'cancelling', T + 1, {});
    expect(await a.s.findJobByTokenHash(a.hash)).toBeNull();
    await a.s.close();

    const b = await running();
    expect((await b.s.findJobByTokenHash(b.hash))?.id).toBe(b.jobId);
    await b.s.pauseJobForBudget(b.jobId, 1, 'out of budget', T + 1);
    expect(await b.s.findJobByTokenHash(b.hash)).toBeNull();
    await b.s.close();
  });

  it('reserve and settle (with the ledger row) give the same figures as the Kysely path; refusals and first use fall back to it', async () => {
    const { s, jobId } = await running();
    // first use of the tree: its row is created by the fallback
    const r1 = await s.reserveBudget(jobId, 600_000, T);
    const r2 = await s.reserveBudget(jobId, 300_000, T);
    if (!r1?.ok || !r2?.ok) throw new Error('must fit');
    expect(r2.budget).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 900_000, remainingMicros: 100_000 });
    expect(await s.reserveBudget(jobId, 100_001, T)).toEqual({ ok: false, budget: r2.budget });
    const call = { jobId, attempt: 1, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: true, httpStatus: 200, inputTokens: 7, outputTokens: 9, cacheReadTokens: 1, cacheWriteTokens: 2, usageKnown: false, costMicros: 12_345, costNanos: 12_345_678, runnerId: null, startedAt: T, durationMs: 3 };
    expect(await s.settleBudget(jobId, r1.reservationId, 12_345, T, call)).toBe(true);
    expect(await s.settleBudget(jobId, r1.reservationId, 0, T)).toBe(false);
    expect(await s.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 12_345, reservedMicros: 300_000, remainingMicros: 687_655 });
    expect(await s.jobUsage(jobId)).toMatchObject({ modelCalls: 1, inputTokens: 7, outputTokens: 9, costMicros: 12_345 });
    await expect(s.settleBudget(jobId, r2.reservationId, 1, T, { ...call, outputTokens: 1.5 })).rejects.toThrow(/outputTokens/);
    expect((await s.getTreeBudget(jobId, T))?.reservedMicros).toBe(300_000); // nothing half-written
    await s.close();
  });
});
