import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
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

  it('a settle whose ledger row is refused writes nothing and fails alone; the other settles of its batch commit', async () => {
    const { s, jobId } = await running();
    const r1 = await s.reserveBudget(jobId, 100_000, T);
    const r2 = await s.reserveBudget(jobId, 200_000, T);
    if (!r1?.ok || !r2?.ok) throw new Error('must fit');
    const call = { jobId, attempt: 1, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 7, runnerId: null, startedAt: T, durationMs: 1 };
    // Same turn, one group transaction: job 999999 does not exist, so its row breaks the foreign key.
    const [bad, good] = await Promise.allSettled([s.settleBudget(jobId, r1.reservationId, 7, T, { ...call, jobId: 999_999 }), s.settleBudget(jobId, r2.reservationId, 5, T, { ...call, costMicros: 5 })]);
    expect(bad.status === 'rejected' && String(bad.reason)).toMatch(/FOREIGN KEY/);
    expect(good).toEqual({ status: 'fulfilled', value: true });
    // r1 is still held whole (100,000 reserved, nothing charged for it); r2 is settled at 5 µ$.
    expect(await s.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 5, reservedMicros: 100_000, remainingMicros: 899_995 });
    expect(await s.jobUsage(jobId)).toMatchObject({ modelCalls: 1, costMicros: 5 });
    expect(await s.settleBudget(jobId, r1.reservationId, 0, T)).toBe(true);
    await s.close();
  });

  it('the ledger row a settle writes is, column by column, the one recordModelCall (Kysely) writes', async () => {
    const { s, jobId } = await running();
    const r = await s.reserveBudget(jobId, 100_000, T);
    if (!r?.ok) throw new Error('must fit');
    const runnerId = (await s.getJob(jobId))!.runnerId!;
    const call = { jobId, attempt: 1, provider: 'anthropic', model: 'claude-x', api: 'openai-chat', streamed: true, httpStatus: 529, inputTokens: 11, outputTokens: 22, cacheReadTokens: 33, cacheWriteTokens: 44, usageKnown: false, costMicros: 55, costNanos: 55_066, runnerId, refused: 'budget', startedAt: T + 77, durationMs: 88 };
    await s.settleBudget(jobId, r.reservationId, 55, T, call);
    await s.recordModelCall(call);
    const raw = new Database(path.join(dirs.at(-1)!, 'data', 'flotilla.db'), { readonly: true });
    const rows = raw.prepare('select * from model_calls order by id').all() as Record<string, unknown>[];
    raw.close();
    expect(rows).toHaveLength(2);
    const { id: _a, ...fast } = rows[0]!;
    const { id: _b, ...kysely } = rows[1]!;
    expect(fast).toEqual(kysely);
    expect(fast).toMatchObject({ job_id: jobId, attempt: 1, provider: 'anthropic', model: 'claude-x', api: 'openai-chat', streamed: 1, http_status: 529, input_tokens: 11, output_tokens: 22, cache_read_tokens: 33, cache_write_tokens: 44, usage_known: 0, cost_micros: 55, cost_nanos: 55_066, runner_id: runnerId, refused: 'budget', started_at: T + 77, duration_ms: 88 });
    await s.close();
  });

  // Two places a batch can fail after a unit's first write: a unit's own later statement (r1's
  // reservation DELETE, after its ledger INSERT) and the tree's row written back at the batch's
  // end (sqlite-tree-rows.ts: the batch's first unit, a 1 µ$ reserve, holds the row; one UPDATE
  // then writes both settles, +12 µ$). Either takes the batch back.
  it.each([
    ['a settle failing after its first write', `create trigger boom before delete on budget_reservations when old.micros = 100000 begin select raise(abort, 'boom'); end`],
    ["the tree's row written back at the batch's end failing", `create trigger boom before update on tree_budgets when new.spent_micros - old.spent_micros = 12 begin select raise(abort, 'boom'); end`],
  ])('%s takes its whole batch back: no unit of it is half-written or kept', async (_name, trigger) => {
    const { s, jobId } = await running();
    const r1 = await s.reserveBudget(jobId, 100_000, T);
    const r2 = await s.reserveBudget(jobId, 200_000, T);
    if (!r1?.ok || !r2?.ok) throw new Error('must fit');
    // A trigger makes one write of the batch fail after earlier ones ran (a statement error, as disk full would be).
    const raw = new Database(path.join(dirs.at(-1)!, 'data', 'flotilla.db'));
    raw.exec(trigger);
    const call = { jobId, attempt: 1, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 5, runnerId: null, startedAt: T, durationMs: 1 };
    const out = await Promise.allSettled([s.reserveBudget(jobId, 1, T), s.settleBudget(jobId, r2.reservationId, 5, T, call), s.settleBudget(jobId, r1.reservationId, 7, T, { ...call, costMicros: 7 })]);
    expect(out.map((o) => o.status === 'rejected' && String(o.reason))).toEqual([expect.stringMatching(/boom/), expect.stringMatching(/boom/), expect.stringMatching(/boom/)]);
    // Nothing of the batch was kept: both reservations held, nothing spent, no ledger row.
    expect(await s.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 300_000, remainingMicros: 700_000 });
    expect(await s.jobUsage(jobId)).toMatchObject({ modelCalls: 0 });
    raw.exec('drop trigger boom');
    raw.close();
    // Both settle once, as if the failed batch never ran.
    expect(await Promise.all([s.settleBudget(jobId, r2.reservationId, 5, T, call), s.settleBudget(jobId, r1.reservationId, 7, T, { ...call, costMicros: 7 })])).toEqual([true, true]);
    expect(await s.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 12, reservedMicros: 0, remainingMicros: 999_988 });
    expect(await s.jobUsage(jobId)).toMatchObject({ modelCalls: 2, costMicros: 12 });
    await s.close();
  });

  it("one turn's reserves and settles of two trees: each sees every earlier one's change to its tree's row, which is written back once as if they ran one by one", async () => {
    const { s, jobId } = await running();
    const other = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 500_000, now: T });
    const held = await s.reserveBudget(jobId, 600_000, T); // creates the row (the fallback path)
    const heldOther = await s.reserveBudget(other.id, 400_000, T);
    if (!held?.ok || !heldOther?.ok) throw new Error('must fit');
    // One turn, in order. Tree A ($1.00): the settle frees 600,000 and spends 100,000, so 800,000
    // then fits (100,000 + 800,000 <= 1,000,000) and 200,000 after it does not (1,100,000).
    // Tree B ($0.50): 200,000 does not fit while 400,000 is held; its settle at 0 frees it all.
    const [settled, fits, tooMuch, notYet, settledOther, fitsOther] = await Promise.all([
      s.settleBudget(jobId, held.reservationId, 100_000, T + 1),
      s.reserveBudget(jobId, 800_000, T + 2),
      s.reserveBudget(jobId, 200_000, T + 3),
      s.reserveBudget(other.id, 200_000, T + 4),
      s.settleBudget(other.id, heldOther.reservationId, 0, T + 5),
      s.reserveBudget(other.id, 500_000, T + 6),
    ]);
    expect(settled).toBe(true);
    expect(settledOther).toBe(true);
    expect(fits).toMatchObject({ ok: true, budget: { rootId: jobId, limitMicros: 1_000_000, spentMicros: 100_000, reservedMicros: 800_000, remainingMicros: 100_000 } });
    expect(tooMuch).toMatchObject({ ok: false });
    expect(notYet).toMatchObject({ ok: false });
    expect(fitsOther).toMatchObject({ ok: true, budget: { rootId: other.id, limitMicros: 500_000, spentMicros: 0, reservedMicros: 500_000, remainingMicros: 0 } });
    // The rows as stored: the figures above, and the time of the last change to each.
    const raw = new Database(path.join(dirs.at(-1)!, 'data', 'flotilla.db'), { readonly: true });
    const rows = raw.prepare('select root_id, spent_micros, reserved_micros, updated_at from tree_budgets order by root_id').all();
    const reservations = raw.prepare('select root_id, micros from budget_reservations order by id').all();
    raw.close();
    expect(rows).toEqual([
      { root_id: jobId, spent_micros: 100_000, reserved_micros: 800_000, updated_at: T + 2 },
      { root_id: other.id, spent_micros: 0, reserved_micros: 500_000, updated_at: T + 6 },
    ]);
    expect(reservations).toEqual([
      { root_id: jobId, micros: 800_000 },
      { root_id: other.id, micros: 500_000 },
    ]);
    await s.close();
  });

  it('reservations of one turn each get the figures right after their own UPDATE; a settle after the sweep released it charges once and gives nothing back twice', async () => {
    const { s, jobId } = await running();
    await s.reserveBudget(jobId, 0, T); // creates the tree's row (the fallback path)
    // One group commit, in order: each result shows the tree as its own UPDATE left it.
    const [a, b, c] = await Promise.all([s.reserveBudget(jobId, 100_000, T, 60_000), s.reserveBudget(jobId, 200_000, T, 300_000), s.reserveBudget(jobId, 300_000, T, 300_000)]);
    if (!a?.ok || !b?.ok || !c?.ok) throw new Error('must fit');
    expect([a.budget, b.budget, c.budget].map((x) => [x.reservedMicros, x.remainingMicros])).toEqual([
      [100_000, 900_000],
      [300_000, 700_000],
      [600_000, 400_000],
    ]);
    expect(new Set([a.reservationId, b.reservationId, c.reservationId]).size).toBe(3);
    // a expires first: the sweep charges its 100,000 (H7); its late settle then replaces that with 20,000.
    expect(await s.releaseExpiredReservations(T + 60_000)).toEqual([{ rootId: jobId, releasedMicros: 100_000, chargedMicros: 100_000, count: 1 }]);
    expect(await s.getTreeBudget(jobId, T)).toMatchObject({ spentMicros: 100_000, reservedMicros: 500_000 });
    expect(await s.settleBudget(jobId, a.reservationId, 20_000, T + 60_001)).toBe(false);
    expect(await s.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 20_000, reservedMicros: 500_000, remainingMicros: 480_000 });
    // b and c settle in one turn, each giving back exactly its own µ$ and charging its own cost.
    expect(await Promise.all([s.settleBudget(jobId, b.reservationId, 7, T + 2), s.settleBudget(jobId, c.reservationId, 11, T + 2)])).toEqual([true, true]);
    expect(await s.getTreeBudget(jobId, T)).toEqual({ rootId: jobId, limitMicros: 1_000_000, spentMicros: 20_018, reservedMicros: 0, remainingMicros: 979_982 });
    // Settled once: a second settle charges its cost but gives nothing back.
    expect(await s.settleBudget(jobId, b.reservationId, 0, T + 3)).toBe(false);
    expect((await s.getTreeBudget(jobId, T))?.reservedMicros).toBe(0);
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
