import { sql } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { toJobRow } from './codec.js';
import type { JobRow, TreeBudget } from './types.js';

/**
 * Budgets per job tree (issue 3). One `tree_budgets` row per root job, created lazily from the
 * root job's `budget_micros` the first time the tree calls a model or is topped up. Money is
 * integer micro-dollars; `now` is epoch ms.
 *
 * The invariant `spent + reserved <= limit` is kept by {@link reserveBudget}: the check and the
 * reservation are ONE conditional UPDATE, which PostgreSQL evaluates under the row lock it
 * takes (a concurrent UPDATE of the same row waits, then re-checks the WHERE on the new row
 * version — READ COMMITTED's EvalPlanQual), and SQLite runs with a single writer. So any
 * number of gateway processes sharing one database never over-reserve. Settled calls may
 * still end above the limit by the error of the input-token estimate (see gateway/budget.ts).
 */

type Row = { root_id: number; limit_micros: number | string; spent_micros: number | string; reserved_micros: number | string };

function toBudget(r: Row): TreeBudget {
  const limitMicros = num(r.limit_micros);
  const spentMicros = num(r.spent_micros);
  const reservedMicros = num(r.reserved_micros);
  return { rootId: num(r.root_id), limitMicros, spentMicros, reservedMicros, remainingMicros: Math.max(0, limitMicros - spentMicros - reservedMicros) };
}

const COLS = ['root_id', 'limit_micros', 'spent_micros', 'reserved_micros'] as const;

/** Creates the tree's row from its root job's budget_micros if missing. False when the root job does not exist. */
async function ensureRow(c: StoreCtx, rootId: number, now: number): Promise<boolean> {
  const res = await c.db
    .insertInto('tree_budgets')
    .columns(['root_id', 'limit_micros', 'spent_micros', 'reserved_micros', 'updated_at'])
    .expression((eb) =>
      eb
        .selectFrom('jobs')
        .select(['id', 'budget_micros', sql.lit(0).as('s'), sql.lit(0).as('r'), sql.lit(now).as('u')])
        .where('id', '=', rootId)
        .where('parent_id', 'is', null),
    )
    .onConflict((oc) => oc.column('root_id').doNothing())
    .executeTakeFirst();
  if (Number(res.numInsertedOrUpdatedRows ?? 0) > 0) return true;
  const row = await c.db.selectFrom('tree_budgets').select('root_id').where('root_id', '=', rootId).executeTakeFirst();
  return row !== undefined;
}

/** The tree's budget (creating its row from the root job if needed), or null when `rootId` is not a root job. */
export async function getTreeBudget(c: StoreCtx, rootId: number, now: number): Promise<TreeBudget | null> {
  assertInt('rootId', rootId, 1);
  let row = await c.db.selectFrom('tree_budgets').select(COLS).where('root_id', '=', rootId).executeTakeFirst();
  if (!row) {
    if (!(await ensureRow(c, rootId, now))) return null;
    row = await c.db.selectFrom('tree_budgets').select(COLS).where('root_id', '=', rootId).executeTakeFirstOrThrow();
  }
  return toBudget(row);
}

/**
 * Reserves `worstMicros` against the tree: one `UPDATE tree_budgets SET reserved = reserved + w
 * WHERE root_id = ? AND spent + reserved + w <= limit RETURNING ...`.
 * @returns `{ ok: true, budget }` (after the reservation) or `{ ok: false, budget }` (unchanged,
 *   the call does not fit); null when `rootId` is not a root job.
 * @throws Error when worstMicros is not an integer >= 0.
 */
export async function reserveBudget(c: StoreCtx, rootId: number, worstMicros: number, now: number): Promise<{ ok: boolean; budget: TreeBudget } | null> {
  assertInt('rootId', rootId, 1);
  assertInt('worstMicros', worstMicros, 0);
  assertInt('now', now, 0);
  for (let i = 0; i < 2; i++) {
    const row = await c.db
      .updateTable('tree_budgets')
      .set({ reserved_micros: sql<number>`reserved_micros + ${worstMicros}`, updated_at: now })
      .where('root_id', '=', rootId)
      .where(sql<boolean>`spent_micros + reserved_micros + ${worstMicros} <= limit_micros`)
      .returning(COLS)
      .executeTakeFirst();
    if (row) return { ok: true, budget: toBudget(row) };
    const cur = await c.db.selectFrom('tree_budgets').select(COLS).where('root_id', '=', rootId).executeTakeFirst();
    if (cur) return { ok: false, budget: toBudget(cur) };
    if (!(await ensureRow(c, rootId, now))) return null;
  }
  return null;
}

/**
 * Settles a call that reserved `reservedMicros`: reserved -= reservedMicros, spent +=
 * costMicros (0 releases a failed call). One UPDATE; spent may exceed the limit by the
 * estimate's error. @throws Error on non-integer or negative amounts.
 */
export async function settleBudget(c: StoreCtx, rootId: number, reservedMicros: number, costMicros: number, now: number): Promise<void> {
  assertInt('rootId', rootId, 1);
  assertInt('reservedMicros', reservedMicros, 0);
  assertInt('costMicros', costMicros, 0);
  await c.db
    .updateTable('tree_budgets')
    .set({
      reserved_micros: sql<number>`case when reserved_micros >= ${reservedMicros} then reserved_micros - ${reservedMicros} else 0 end`,
      spent_micros: sql<number>`spent_micros + ${costMicros}`,
      updated_at: now,
    })
    .where('root_id', '=', rootId)
    .execute();
}

/**
 * Adds `addMicros` to the tree's limit (and to the root job's `budget_micros`, so job views
 * show the new limit), one transaction. Null when `rootId` is not a root job.
 * @throws Error when addMicros is not an integer >= 1.
 */
export async function topUpBudget(c: StoreCtx, rootId: number, addMicros: number, now: number): Promise<TreeBudget | null> {
  assertInt('rootId', rootId, 1);
  assertInt('addMicros', addMicros, 1);
  if (!(await ensureRow(c, rootId, now))) return null;
  return c.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('tree_budgets')
      .set({ limit_micros: sql<number>`limit_micros + ${addMicros}`, updated_at: now })
      .where('root_id', '=', rootId)
      .returning(COLS)
      .executeTakeFirstOrThrow();
    await trx.updateTable('jobs').set({ budget_micros: num(row.limit_micros) }).where('id', '=', rootId).execute();
    return toBudget(row);
  });
}

/**
 * A running (or assigned) attempt whose tree ran out of budget → `paused` with endReason
 * `budget`; its token dies (the resumed attempt gets a new one). Fenced by attempt. Returns
 * the updated row, or null when the job was not in that attempt/status.
 */
export async function pauseJobForBudget(c: StoreCtx, jobId: number, attempt: number, reason: string, now: number): Promise<JobRow | null> {
  assertInt('jobId', jobId, 1);
  assertInt('attempt', attempt, 0);
  assertInt('now', now, 0);
  const row = await c.db
    .updateTable('jobs')
    .set({ status: 'paused', end_reason: 'budget', error: reason.slice(0, 2000), token_hash: null })
    .where('id', '=', jobId)
    .where('attempt', '=', attempt)
    .where('status', 'in', ['assigned', 'running'])
    .returningAll()
    .executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}

/**
 * Every job of the tree that is `paused` for budget goes back to `queued`, to resume where it
 * stopped: resume_session_id = its session id (the harness continues the conversation),
 * pinned to the runner that ran it (its workspace is there; claim honours the pin), error
 * and end reason cleared, token and assignment cleared (the next claim makes a new attempt).
 * One UPDATE. Returns the resumed jobs.
 */
export async function resumeBudgetPausedJobs(c: StoreCtx, rootId: number, now: number): Promise<JobRow[]> {
  assertInt('rootId', rootId, 1);
  assertInt('now', now, 0);
  const rows = await c.db
    .updateTable('jobs')
    .set((eb) => ({
      status: 'queued',
      resume_session_id: eb.fn.coalesce('session_id', 'resume_session_id'),
      // 0004: the session's workspace lives on the runner that ran it: claim only there.
      pinned_runner_id: eb.fn.coalesce('runner_id', 'pinned_runner_id'),
      end_reason: null,
      error: null,
      assigned_at: null,
      token_hash: null,
    }))
    .where('root_id', '=', rootId)
    .where('status', '=', 'paused')
    .where('end_reason', '=', 'budget')
    .returningAll()
    .execute();
  return rows.map((r) => toJobRow(c.codec, r)).sort((a, b) => a.id - b.id);
}
