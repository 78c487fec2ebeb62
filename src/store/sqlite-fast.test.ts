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

  it('a cached job token is refused the moment a runner frame ends its job; frames of one turn are stored in order, each with its own seqs', async () => {
    const a = await running();
    const runnerId = (await a.s.getJob(a.jobId))!.runnerId!;
    const other = await a.s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now: T });
    expect((await a.s.findJobByTokenHash(a.hash))?.id).toBe(a.jobId); // cached now
    const msg = (text: string, rseq: number) => ({ type: 'message' as const, data: { role: 'assistant' as const, text }, rseq, at: new Date(T).toISOString() });
    // Same turn: one group commit. The unknown job's frame is refused alone; the other two apply.
    const [one, unknown, two] = await Promise.all([
      a.s.applyRunnerFrame({ jobId: a.jobId, attempt: 1, runnerId, events: [msg('a', 1), msg('b', 2)] }, T + 1),
      a.s.applyRunnerFrame({ jobId: other.id + 1, attempt: 1, runnerId, events: [msg('x', 1)] }, T + 1),
      a.s.applyRunnerFrame({ jobId: a.jobId, attempt: 1, runnerId, events: [msg('c', 3), { type: 'job.finished', data: { status: 'failed' }, rseq: 4, at: new Date(T).toISOString() }], move: { from: ['running'], to: 'failed', endReason: 'error', error: 'boom' } }, T + 2),
    ]);
    expect(one).toMatchObject({ accepted: true, upTo: 2, moved: null });
    expect(unknown).toEqual({ accepted: false, job: null });
    expect(two).toMatchObject({ accepted: true, upTo: 4, moved: { status: 'failed', error: 'boom', finishedAt: T + 2 } });
    expect((await a.s.listEvents(a.jobId, 0, 10)).map((e) => `${e.seq}:${e.type === 'message' ? e.data.text : e.type}`)).toEqual(['1:a', '2:b', '3:c', '4:job.finished']);
    expect(await a.s.findJobByTokenHash(a.hash)).toBeNull();
    await a.s.close();
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

  it('50 reservations at once (one group commit) never over-reserve: 33 × 30,000 µ$ fit in 1,000,000; settles and notes queued at close are written', async () => {
    const { s, jobId } = await running();
    await s.reserveBudget(jobId, 0, T); // creates the tree's row (the fallback path)
    const all = await Promise.all(Array.from({ length: 50 }, () => s.reserveBudget(jobId, 30_000, T)));
    const granted = all.filter((r) => r?.ok);
    expect(granted).toHaveLength(33); // ⌊1,000,000 / 30,000⌋
    expect(all.filter((r) => r && !r.ok)).toHaveLength(17);
    expect((await s.getTreeBudget(jobId, T))?.reservedMicros).toBe(990_000);
    // Settle them all (cost 1,000 µ$ each) and note two call starts without awaiting: close writes them.
    for (const r of granted) if (r?.ok) void s.settleBudget(jobId, r.reservationId, 1_000, T);
    void s.noteModelCall(jobId, 1, 'start', T);
    void s.noteModelCall(jobId, 1, 'start', T + 5);
    await s.close();
    const again = await openStore({ dataDir: path.join(dirs.at(-1)!, 'data') });
    expect(await again.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 33_000, reservedMicros: 0, remainingMicros: 967_000 });
    expect(await again.modelCallActivity([{ jobId, attempt: 1 }])).toEqual([{ jobId, attempt: 1, inFlight: 2, lastAt: T + 5 }]);
    await again.close();
  });
});
