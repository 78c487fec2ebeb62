import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from './open.js';
import { SQLITE_WRITER } from './sqlite-fast.js';
import { sqliteWriter, type SqliteWriter } from './sqlite-writer.js';
import { sqliteTreeRows } from './sqlite-tree-rows.js';
import { createGroupCommit } from './sqlite-group-commit.js';
import { sqliteBudgetUnits } from './sqlite-budget-units.js';
import { mainSide, newLockMemory } from './thread-write-lock.js';
import type { NewModelCall, Store } from './types.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
const T = 1_800_000_000_000;
const LIMIT = 1_000_000; // µ$

/** A store on a data folder with one running root job whose tree has LIMIT µ$, and its writer. */
async function tree(): Promise<{ s: Store; dataDir: string; jobId: number; writer: SqliteWriter }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-writer-'));
  dirs.push(dir);
  const dataDir = path.join(dir, 'data');
  const s = await openStore({ dataDir });
  const runner = await s.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now: T });
  const job = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: LIMIT, now: T });
  await s.claimJob({ id: runner.id, labels: {} }, 'a'.repeat(64), T);
  await s.transitionJob(job.id, 1, ['assigned'], 'running', T, { startedAt: T });
  const writer = (s as unknown as Record<symbol, SqliteWriter | null>)[SQLITE_WRITER];
  if (!writer) throw new Error('a store on a file has a writer');
  writer.smallBatchesOnMain = false; // every batch on the thread, however small (one test below turns it back on)
  return { s, dataDir, jobId: job.id, writer };
}

const call = (jobId: number, costMicros: number): NewModelCall => ({
  jobId,
  attempt: 1,
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  api: 'anthropic-messages',
  streamed: false,
  httpStatus: 200,
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  usageKnown: true,
  costMicros,
  startedAt: T,
  durationMs: 1,
});

/** Meters zero-cost calls until the writer thread runs the units (it starts at the first one), 10 s at most. */
async function untilOnThread(t: { s: Store; jobId: number; writer: SqliteWriter }): Promise<void> {
  expect(t.writer.onThread).toBe(false);
  const deadline = Date.now() + 10_000;
  while (!t.writer.onThread && Date.now() < deadline) {
    const r = await t.s.reserveBudget(t.jobId, 0, T);
    if (!r?.ok) throw new Error('a zero reserve fits');
    await t.s.settleBudget(t.jobId, r.reservationId, 0, T);
    await new Promise((res) => setTimeout(res, 20));
  }
  expect(t.writer.onThread).toBe(true);
}

describe('SQLite writer thread (sqlite-writer.ts)', () => {
  it('runs the budget check exactly on its own connection: of 50 concurrent reserves of 30,000 µ$ against 1,000,000, 33 fit; settles and their ledger rows are seen by the next read', async () => {
    const t = await tree();
    await untilOnThread(t);
    const reserves = await Promise.all(Array.from({ length: 50 }, () => t.s.reserveBudget(t.jobId, 30_000, T + 1)));
    const held = reserves.filter((r) => r?.ok === true);
    // floor(1,000,000 / 30,000) = 33; the 34th would make 1,020,000
    expect(held).toHaveLength(33);
    expect(reserves.filter((r) => r?.ok === false)).toHaveLength(17);
    expect(await t.s.getTreeBudget(t.jobId, T + 1)).toMatchObject({ limitMicros: LIMIT, spentMicros: 0, reservedMicros: 990_000 });
    // Settles not awaited: the read issued after them waits for them (the writer's barrier).
    const settles = held.map((r) => t.s.settleBudget(t.jobId, (r as { reservationId: number }).reservationId, 10_000, T + 2, call(t.jobId, 10_000)));
    const usage = await t.s.jobUsage(t.jobId);
    expect(usage).toMatchObject({ modelCalls: 33, costMicros: 330_000, inputTokens: 330, outputTokens: 165 });
    expect(await Promise.all(settles)).toEqual(Array(33).fill(true));
    expect(await t.s.getTreeBudget(t.jobId, T + 2)).toMatchObject({ spentMicros: 330_000, reservedMicros: 0 });
    expect(t.writer.onThread).toBe(true);
    await t.s.close();
    // Closed with the thread's writes in the file.
    const db = new Database(path.join(t.dataDir, 'flotilla.db'), { readonly: true });
    try {
      expect(db.prepare('select count(*) n, sum(cost_micros) c from model_calls').get()).toEqual({ n: 33, c: 330_000 });
      expect(db.prepare('select count(*) n from budget_reservations').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });

  it("a unit that fails gets SQLite's own error and fails alone; the batch's other units are kept", async () => {
    const t = await tree();
    await untilOnThread(t);
    const [a, b] = await Promise.all([t.s.reserveBudget(t.jobId, 1_000, T + 1), t.s.reserveBudget(t.jobId, 2_000, T + 1)]);
    if (!a?.ok || !b?.ok) throw new Error('both fit');
    // Same turn, one batch: the first one's ledger row names a job that does not exist.
    const [bad, good] = await Promise.allSettled([t.s.settleBudget(t.jobId, a.reservationId, 700, T + 2, call(t.jobId + 1000, 700)), t.s.settleBudget(t.jobId, b.reservationId, 1_500, T + 2, call(t.jobId, 1_500))]);
    expect(bad.status).toBe('rejected');
    expect((bad as PromiseRejectedResult).reason).toBeInstanceOf(Database.SqliteError);
    expect((bad as PromiseRejectedResult).reason.code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(good).toEqual({ status: 'fulfilled', value: true });
    // The failed settle wrote nothing: its reservation (1,000) is still held, the other is spent.
    expect(await t.s.getTreeBudget(t.jobId, T + 2)).toMatchObject({ spentMicros: 1_500, reservedMicros: 1_000 });
    expect(await t.s.jobUsage(t.jobId)).toMatchObject({ modelCalls: 1, costMicros: 1_500 });
    await t.s.close();
  });

  it("the event loop's writes and the thread's share the file without a busy error: 40 top-ups during 200 metered calls all land", async () => {
    const t = await tree();
    await untilOnThread(t);
    const metered = Array.from({ length: 200 }, async (_, i) => {
      const r = await t.s.reserveBudget(t.jobId, 4_000, T + 1);
      if (!r?.ok) return 0;
      await t.s.settleBudget(t.jobId, r.reservationId, 1_000 + i, T + 2, call(t.jobId, 1_000 + i));
      return 1_000 + i;
    });
    // Kysely's writes on the store's connection (a transaction each), interleaved with them.
    const topUps = Array.from({ length: 40 }, async (_, i) => {
      await new Promise((res) => setTimeout(res, i % 5));
      return t.s.topUpBudget(t.jobId, 10_000, T + 3);
    });
    const [spent, ups] = await Promise.all([Promise.all(metered), Promise.all(topUps)]);
    expect(ups.every((u) => u !== null)).toBe(true);
    const total = spent.reduce((a, b) => a + b, 0);
    expect(await t.s.getTreeBudget(t.jobId, T + 3)).toMatchObject({ limitMicros: LIMIT + 400_000, spentMicros: total, reservedMicros: 0 });
    expect((await t.s.jobUsage(t.jobId)).costMicros).toBe(total);
    await t.s.close();
  });
});

describe("a child job's reserve (sub-limits on its path: the store's Kysely path)", () => {
  it.each([false, true])('waits for the units issued before it: it sees a settle issued in the same turn (small batches on the store\'s connection: %s)', async (smallOnMain) => {
    const t = await tree();
    await untilOnThread(t);
    t.writer.smallBatchesOnMain = smallOnMain;
    await new Promise((res) => setTimeout(res, 200)); // the thread sleeps: a batch of one goes where smallOnMain says
    const child = await t.s.createJob({ parentId: t.jobId, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 0, now: T });
    const big = await t.s.reserveBudget(t.jobId, 900_000, T + 1);
    if (!big?.ok) throw new Error('900,000 of 1,000,000 fits');
    // Settled at 100,000, not awaited; the child's 800,000 fits only once that settle has freed
    // the 900,000 held: 100,000 spent + 800,000 = 900,000 ≤ 1,000,000 (with it still held: 1,700,000).
    const settle = t.s.settleBudget(t.jobId, big.reservationId, 100_000, T + 2, call(t.jobId, 100_000));
    const r = await t.s.reserveBudget(t.jobId, 800_000, T + 2, 60_000, child.id);
    expect(await settle).toBe(true);
    expect(r).toMatchObject({ ok: true, budget: { spentMicros: 100_000, reservedMicros: 800_000 } });
    await t.s.close();
  });
});

describe('small batches while the thread sleeps', () => {
  it('run on the store\'s connection; larger ones, and any while a batch is on the thread, go to the thread; the order holds', async () => {
    const t = await tree();
    await untilOnThread(t);
    t.writer.smallBatchesOnMain = true;
    const sleeping = () => new Promise((res) => setTimeout(res, 200)); // the thread is asleep by then
    await sleeping();
    const sent = t.writer.threadBatches;
    // One reserve and its settle, each a batch of one: both on the store's connection.
    const a = await t.s.reserveBudget(t.jobId, 10_000, T + 1);
    if (!a?.ok) throw new Error('fits');
    expect(await t.s.settleBudget(t.jobId, a.reservationId, 4_000, T + 2, call(t.jobId, 4_000))).toBe(true);
    expect(t.writer.threadBatches).toBe(sent);
    expect(await t.s.getTreeBudget(t.jobId, T + 2)).toMatchObject({ spentMicros: 4_000, reservedMicros: 0 });
    await sleeping();
    // Three in one turn (more than MAIN_BATCH_UNITS): one batch on the thread. A single reserve
    // issued in the next turn follows it to the thread while it is in flight (or, when the
    // thread has answered and sleeps by then, runs on the store's connection): either way after it.
    const three = [1, 2, 3].map(() => t.s.reserveBudget(t.jobId, 100_000, T + 3));
    await new Promise((res) => setImmediate(res));
    expect(t.writer.threadBatches).toBe(sent + 1);
    const fourth = t.s.reserveBudget(t.jobId, 100_000, T + 3);
    const results = await Promise.all([...three, fourth]);
    expect(results.map((r) => r?.ok)).toEqual([true, true, true, true]);
    expect([sent + 1, sent + 2]).toContain(t.writer.threadBatches);
    // Issue order kept: the fourth saw the three before it (4,000 spent + 4 × 100,000 reserved).
    expect(results[3]).toMatchObject({ budget: { reservedMicros: 400_000, spentMicros: 4_000 } });
    await t.s.close();
  });
});

describe('SQLite writer thread that cannot start', () => {
  it("the units run on the store's connection, as without a thread", async () => {
    const t = await tree();
    const zero = await t.s.reserveBudget(t.jobId, 0, T); // makes the tree's budget row
    if (!zero?.ok) throw new Error('a zero reserve fits');
    await t.s.settleBudget(t.jobId, zero.reservationId, 0, T);
    await t.s.close();
    const sqlite = new Database(path.join(t.dataDir, 'flotilla.db'));
    try {
      const trees = sqliteTreeRows(sqlite);
      const group = createGroupCommit(sqlite, async (fn) => fn(), { begin: trees.reset, end: trees.flush });
      const memory = newLockMemory();
      // A file the thread cannot open: it fails as it starts.
      const writer = sqliteWriter({ file: path.join(t.dataDir, 'gone', 'x.db'), lock: mainSide(memory), lockMemory: memory, group, units: sqliteBudgetUnits(sqlite, trees), busyTimeoutMs: 1_000 });
      const first = await writer.reserve(t.jobId, 100_000, T + 1, 60_000, null);
      expect(first).toMatchObject({ ok: true, budget: { reservedMicros: 100_000 } });
      await new Promise((res) => setTimeout(res, 1_500)); // the thread has failed by now
      expect(writer.onThread).toBe(false);
      const second = await writer.reserve(t.jobId, 950_000, T + 1, 60_000, null); // 100,000 + 950,000 > 1,000,000
      expect(second).toBeNull();
      expect(await writer.settle(t.jobId, (first as { reservationId: number }).reservationId, 40_000, T + 2, null)).toBe('held');
      expect(sqlite.prepare('select spent_micros s, reserved_micros r from tree_budgets where root_id = ?').get(t.jobId)).toEqual({ s: 40_000, r: 0 });
      await writer.close();
    } finally {
      sqlite.close();
    }
  });
});

describe('SQLite writer thread that dies while it runs units', () => {
  it('its units in flight fail with the error, the rest run on the store\'s connection, and spent still equals the ledger', async () => {
    const t = await tree();
    await untilOnThread(t);
    // 60 calls (reserve 10,000 µ$, then settle at 5,000 with a ledger row), issued over three
    // turns so that when the thread dies some units are in flight and some queued behind them.
    const flows: Promise<'settled' | 'refused' | Error>[] = [];
    for (let wave = 0; wave < 3; wave++) {
      for (let i = 0; i < 20; i++) {
        flows.push(
          (async () => {
            const r = await t.s.reserveBudget(t.jobId, 10_000, T + 1);
            if (!r?.ok) return 'refused';
            expect(await t.s.settleBudget(t.jobId, r.reservationId, 5_000, T + 2, call(t.jobId, 5_000))).toBe(true);
            return 'settled';
          })().catch((e: Error) => e),
        );
      }
      await new Promise((res) => setImmediate(res));
    }
    await t.writer.kill();
    expect(t.writer.onThread).toBe(false);
    const outcomes = await Promise.all(flows);
    const errors = outcomes.filter((o): o is Error => o instanceof Error);
    for (const e of errors) expect(e.message).toMatch(/^SQLite writer thread (exited|failed)/);
    const settled = outcomes.filter((o) => o === 'settled').length;
    // 60 × 10,000 = 600,000 ≤ 1,000,000: none refused
    expect(outcomes.filter((o) => o === 'refused')).toHaveLength(0);
    expect(settled + errors.length).toBe(60);
    // Each settle and its ledger row are one unit: whatever the thread committed before it died,
    // spent equals the ledger's sum. A settle committed whose reply was lost is in both.
    const usage = await t.s.jobUsage(t.jobId);
    const before = await t.s.getTreeBudget(t.jobId, T + 2);
    expect(before!.spentMicros).toBe(usage.costMicros);
    expect(usage.costMicros % 5_000).toBe(0);
    expect(usage.costMicros).toBeGreaterThanOrEqual(settled * 5_000);
    expect(usage.costMicros).toBeLessThanOrEqual(60 * 5_000);
    // Later calls run on the store's connection, exactly.
    const r = await t.s.reserveBudget(t.jobId, 10_000, T + 3);
    if (!r?.ok) throw new Error(`10,000 fits in ${JSON.stringify(before)}`);
    expect(r.budget.reservedMicros).toBe(before!.reservedMicros + 10_000);
    expect(await t.s.settleBudget(t.jobId, r.reservationId, 7_000, T + 4, call(t.jobId, 7_000))).toBe(true);
    expect(await t.s.getTreeBudget(t.jobId, T + 4)).toMatchObject({ spentMicros: before!.spentMicros + 7_000, reservedMicros: before!.reservedMicros });
    expect((await t.s.jobUsage(t.jobId)).costMicros).toBe(usage.costMicros + 7_000);
    expect(t.writer.onThread).toBe(false);
    await t.s.close();
  });
});
