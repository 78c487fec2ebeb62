// The refused call's worst case is stored with a budget pause (jobs.paused_need_micros, 0024)
// and the resume rule (budget-resume.ts) reads it there, not from the pause reason's wording:
// a reason without the amount, or with another amount, still resumes only when every budget on
// the job's path has room for the stored need. A job paused before 0024 (column null) falls
// back to the reason's text. SQLite and PostgreSQL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from './sqlite.js';
import { createTestDatabase, pgStoreFixture, type TestDatabase } from './test-pg.js';
import type { Store } from './types.js';

const T = 1_800_000_000_000;

/** Reads and writes jobs.paused_need_micros behind the store's back (a row paused before 0024 has null). */
interface RawNeed {
  get(jobId: number): Promise<number | null>;
  clear(jobId: number): Promise<void>;
}

async function scenario(s: Store, raw: RawNeed): Promise<void> {
  const runner = await s.createRunner({ name: `r-${T}`, labels: {}, capacity: 8, credentialHash: 'n'.padEnd(64, '0'), now: T });
  const job = (parentId: number | null, budgetMicros: number) => s.createJob({ parentId, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros, now: T });
  const root = await job(null, 1_000_000);
  // three children, each a $0.03 sub-limit with $0.0204 spent: $0.0096 left, a refused call of $0.0101
  const kids = [await job(root.id, 30_000), await job(root.id, 30_000), await job(root.id, 30_000)];
  let k = 0;
  for (const kid of kids) {
    await s.claimJobById(kid.id, { id: runner.id, labels: {} }, `need${++k}`.padEnd(64, '0'), T);
    await s.transitionJob(kid.id, 1, ['assigned'], 'running', T, { sessionId: `sess-${kid.id}`, startedAt: T });
    const r = await s.reserveBudget(root.id, 20_400, T, 60_000, kid.id);
    if (!r?.ok) throw new Error('no fit');
    await s.settleBudget(root.id, r.reservationId, 20_400, T);
  }
  const [reworded, otherAmount, legacy] = kids as [typeof root, typeof root, typeof root];
  await expect(s.pauseJobForBudget(reworded.id, 1, 'x', T + 1, -1)).rejects.toThrow(/needMicros/);
  expect(await s.pauseJobForBudget(reworded.id, 1, `budget exhausted: job ${reworded.id} is out of money (a later wording)`, T + 1, 10_100)).toMatchObject({ status: 'paused' });
  expect(await s.pauseJobForBudget(otherAmount.id, 1, 'budget exhausted: ...; this call may cost up to $0.000050. Top up with: ...', T + 1, 10_100)).toMatchObject({ status: 'paused' });
  // no amount given: read from the gateway's message once, at the pause
  expect(await s.pauseJobForBudget(legacy.id, 1, 'budget exhausted: ...; this call may cost up to $0.010100. Top up with: ...', T + 1)).toMatchObject({ status: 'paused' });
  expect([await raw.get(reworded.id), await raw.get(otherAmount.id), await raw.get(legacy.id)]).toEqual([10_100, 10_100, 10_100]);
  // the job rows carry it (the budget view's resumeNeeds reads it there: server/budget-resume-needs.ts)
  expect((await s.getJob(reworded.id))?.pausedNeedMicros).toBe(10_100);
  expect((await s.listTreeJobs(root.id)).map((j) => j.pausedNeedMicros)).toEqual([null, 10_100, 10_100, 10_100]);
  await raw.clear(legacy.id); // as if paused before 0024: the rule reads the reason's text
  expect((await s.getJob(legacy.id))?.pausedNeedMicros).toBeNull();

  for (const kid of kids) {
    // +$0.0004: $0.0100 left, 1 µ$ short of the $0.0101 call → stays paused
    expect(await s.topUpJobBudget(kid.id, 400, T + 2)).toMatchObject({ ok: true, budget: { remainingMicros: 10_000 } });
    expect(await s.listResumableBudgetPausedJobs(root.id, { jobId: kid.id })).toEqual([]);
    // +$0.0001: exactly room for it
    expect(await s.topUpJobBudget(kid.id, 100, T + 3)).toMatchObject({ ok: true, budget: { remainingMicros: 10_100 } });
    expect(await s.listResumableBudgetPausedJobs(root.id, { jobId: kid.id })).toEqual([kid.id]);
  }
  // resumed: the stored need stays, held against the tree until the resumed attempt's first call (budget-resume.ts resumedNeedHolds)
  expect((await s.resumeBudgetPausedJobs(root.id, T + 4, [reworded.id])).map((j) => j.status)).toEqual(['queued']);
  expect(await raw.get(reworded.id)).toBe(10_100);
  // what stands before each paused job (the budget view's figure): reworded's hold (the tree and its own sub-limit), and the paused jobs of lower id
  expect(await s.budgetResumeHolds(root.id, otherAmount.id)).toEqual(new Map([['tree', 10_100], [String(reworded.id), 10_100]]));
  expect(await s.budgetResumeHolds(root.id, legacy.id)).toEqual(new Map([['tree', 20_200], [String(reworded.id), 10_100], [String(otherAmount.id), 10_100]]));
  expect(await s.budgetResumeHolds(root.id, reworded.id)).toEqual(new Map());
  // a queued job holds no call yet: the hold ends only once it runs and calls
  expect(await s.endBudgetResumeHold(reworded.id)).toBeNull();
}

/**
 * Two paused siblings sharing the tree, each needing $0.255656: a top-up with room for one
 * resumes one (the lower id), not both (tester finding: both resumed, and the second was refused
 * and paused again at once); room for both resumes both; a granted resume still waiting for its
 * process to exit holds its need too.
 */
async function together(s: Store): Promise<void> {
  const runner = await s.createRunner({ name: `t-${T}`, labels: {}, capacity: 8, credentialHash: 't'.padEnd(64, '0'), now: T });
  const job = (parentId: number | null, budgetMicros: number) => s.createJob({ parentId, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros, now: T });
  const root = await job(null, 100_000);
  const kids = [await job(root.id, 0), await job(root.id, 0), await job(root.id, 0)];
  let k = 0;
  for (const kid of kids) {
    await s.claimJobById(kid.id, { id: runner.id, labels: {} }, `tog${++k}`.padEnd(64, '0'), T);
    await s.transitionJob(kid.id, 1, ['assigned'], 'running', T, { sessionId: `sess-${kid.id}`, startedAt: T });
  }
  const r = await s.reserveBudget(root.id, 100_000, T);
  await s.settleBudget(root.id, r!.ok ? r!.reservationId : 0, 100_000, T); // the tree spent: $0 left
  const [a, b, c] = kids as [typeof root, typeof root, typeof root];
  for (const kid of [a, b]) expect(await s.pauseJobForBudget(kid.id, 1, 'budget exhausted', T + 1, 255_656)).toMatchObject({ status: 'paused' });
  await s.topUpBudget(root.id, 400_000, T + 2); // room $0.40: one $0.255656 call, not two
  expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([a.id]);
  await s.topUpBudget(root.id, 111_312, T + 3); // room $0.511312 = 2 × $0.255656
  expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([a.id, b.id]);
  // a granted resume waiting for its exit (a's attempt still holds its runner) holds its need: then b fits, and c (paused too) no longer does
  expect((await s.deferHeldBudgetResumes(root.id, [a.id])).map((j) => j.id)).toEqual([a.id]);
  expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([b.id]);
  expect(await s.pauseJobForBudget(c.id, 1, 'budget exhausted', T + 4, 255_656)).toMatchObject({ status: 'paused' });
  expect(await s.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([b.id]);
}

/**
 * What stands before a paused job when its own budgets are topped up (the view's "a top-up of at
 * least X resumes it"): a paused job ahead of it (lower id) that its own sub-limit, short and off
 * this job's path, keeps out takes nothing of such a top-up (fresh tester: its whole need was
 * counted, and the advice overpaid by it); one the tree alone keeps out is counted.
 */
async function offPath(s: Store): Promise<void> {
  const runner = await s.createRunner({ name: `o-${T}`, labels: {}, capacity: 8, credentialHash: 'o'.padEnd(64, '0'), now: T });
  const job = (parentId: number | null, budgetMicros: number) => s.createJob({ parentId, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros, now: T });
  const root = await job(null, 4_000);
  // k: a $0.003 sub-limit; j and l share the tree
  const [k, j, l] = [await job(root.id, 3_000), await job(root.id, 0), await job(root.id, 0)];
  let n = 0;
  for (const kid of [k, j, l]) {
    await s.claimJobById(kid.id, { id: runner.id, labels: {} }, `off${++n}`.padEnd(64, '0'), T);
    await s.transitionJob(kid.id, 1, ['assigned'], 'running', T, { sessionId: `sess-${kid.id}`, startedAt: T });
  }
  expect(await s.pauseJobForBudget(k.id, 1, 'budget exhausted', T + 1, 7_764)).toMatchObject({ status: 'paused' });
  expect(await s.pauseJobForBudget(j.id, 1, 'budget exhausted', T + 1, 30_000)).toMatchObject({ status: 'paused' });
  // k's $0.007764 does not fit its $0.003 sub-limit: a top-up of the tree for j never resumes it
  expect(await s.budgetResumeHolds(root.id, j.id)).toEqual(new Map());
  // l's view: j is ahead (the tree alone keeps it out, and a tree top-up resumes it first); k is not
  expect(await s.pauseJobForBudget(l.id, 1, 'budget exhausted', T + 1, 1_000)).toMatchObject({ status: 'paused' });
  expect(await s.budgetResumeHolds(root.id, l.id)).toEqual(new Map([['tree', 30_000]]));
  // once k's sub-limit has room, a tree top-up may resume it first: counted again, on the tree and its sub-limit
  await s.topUpBudget(root.id, 10_000, T + 2);
  expect(await s.topUpJobBudget(k.id, 4_764, T + 3)).toMatchObject({ ok: true, budget: { remainingMicros: 7_764 } });
  expect(await s.budgetResumeHolds(root.id, j.id)).toEqual(new Map([['tree', 7_764], [String(k.id), 7_764]]));
}

describe('on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-budget-need-'));
  const opened: Array<{ close(): unknown }> = [];
  afterAll(async () => {
    for (const o of opened) await o.close();
    rmSync(dir, { recursive: true, force: true });
  });
  it('a paused job ahead kept out by its own short sub-limit does not count in what resumes another', async () => {
    const s = await openSqliteStore(join(dir, 'off-path.sqlite'));
    opened.push(s);
    await offPath(s);
  });
  it('paused siblings resume together only when they fit together', async () => {
    const s = await openSqliteStore(join(dir, 'together.sqlite'));
    opened.push(s);
    await together(s);
  });
  it('resumes only when room >= the stored need, whatever the reason says', async () => {
    const file = join(dir, 'db.sqlite');
    const s = await openSqliteStore(file);
    opened.push(s);
    const db = new Database(file);
    db.pragma('busy_timeout = 5000');
    opened.push(db);
    await scenario(s, {
      get: async (id) => (db.prepare('select paused_need_micros as n from jobs where id = ?').get(id) as { n: number | null }).n,
      clear: async (id) => void db.prepare('update jobs set paused_need_micros = null where id = ?').run(id),
    });
  });
});

const pgDb: TestDatabase | null = await createTestDatabase();
const f = pgStoreFixture(pgDb);
describe.skipIf(!pgDb)('on PostgreSQL', () => {
  it('a paused job ahead kept out by its own short sub-limit does not count in what resumes another', async () => {
    await offPath(f.store);
  });
  it('paused siblings resume together only when they fit together', async () => {
    await together(f.store);
  });
  it('resumes only when room >= the stored need, whatever the reason says', async () => {
    await scenario(f.store, {
      get: async (id) => {
        const r = await f.raw.query<{ n: string | null }>('select paused_need_micros as n from jobs where id = $1', [id]);
        return r.rows[0]!.n === null ? null : Number(r.rows[0]!.n);
      },
      clear: async (id) => void (await f.raw.query('update jobs set paused_need_micros = null where id = $1', [id])),
    });
  });
});
