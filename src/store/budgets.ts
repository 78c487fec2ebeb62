import { sql, type Kysely, type Transaction } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { modelCallValues } from './model-calls.js';
import { chargeSubLimitsLate, parseJobIds, reserveWithSubLimits, settleJobRows, type RefusingBudget } from './job-budgets.js';
import { encodePendingCall } from './pending-call.js';
import type { BudgetReservationResult, NewModelCall, PendingCall, TreeBudget } from './types.js';
import type { Database } from './schema.js';
import { budgetFigures, doesNotFit } from './budget-figures.js';
import { endHoldAtReservation, lockTree, ownHold, syncTreeHolds } from './budget-holds.js';

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

type Db = Kysely<Database> | Transaction<Database>;
type Row = { root_id: number; limit_micros: number | string; spent_micros: number | string; reserved_micros: number | string; held_micros: number | string };

/** The figures of a tree's row (budget-figures.ts), less `own` µ$ of its held room: the calling job's own hold. */
function toBudget(r: Row, own = 0): TreeBudget {
  return budgetFigures(num(r.root_id), undefined, num(r.limit_micros), num(r.spent_micros), num(r.reserved_micros), num(r.held_micros), own);
}

const COLS = ['root_id', 'limit_micros', 'spent_micros', 'reserved_micros', 'held_micros'] as const;

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
 * How long a reservation is held when the caller does not say and its gateway stops keeping it
 * alive, ms: 2 min. A live call's gateway extends it every third of this (gateway/budget.ts
 * keepAlive), so it bounds only how long a dead gateway's reservations block its tree (calls
 * that fit but for them get retryable 429s meanwhile; Claude Code retries for ~4 min) before the
 * sweep charges them; a reservation swept while its call still lives (its gateway could not
 * reach the store for 80 s) is corrected by that call's settle.
 */
export const DEFAULT_RESERVATION_TTL_MS = 2 * 60_000;

/**
 * Reserves `worstMicros` against the tree, in ONE transaction (on PostgreSQL one statement,
 * see reservePg): the conditional `UPDATE
 * tree_budgets SET reserved = reserved + w WHERE root_id = ? AND spent + reserved + held + w <=
 * limit RETURNING ...` (the check and the reservation in one statement, see the top of this
 * file; `held` the room held for resumed jobs' calls, budget-holds.ts), then the
 * `budget_reservations` row (id, micros, expires_at = now + ttlMs) that lets the sweeper give
 * the micros back if this gateway process dies before settling.
 * @returns `{ ok: true, budget, reservationId }` (after the reservation) or `{ ok: false,
 *   budget }` (unchanged, the call does not fit); null when `rootId` is not a root job.
 * With `jobId` (issue 6), the sub-limit of that job and of each ancestor that has one are
 * reserved in the same transaction (job-budgets.ts); a refusal by a sub-limit returns its
 * figures (`budget.jobId` set). `call` (H7) is stored on the reservation row (JSON,
 * pending-call.ts): the ledger row the sweep writes if the call is never settled. `holder`
 * (a job whose row says it may hold room from a resume): its own hold is read after the tree's
 * lock and not counted against it (budget-holds.ts ownHold), and ends when its call is admitted
 * (endHoldAtReservation: the reservation keeps the room from there). A call refused while the budget
 * holds room for others has the holds written again from the jobs (budget-holds.ts
 * syncBudgetHolds: a hold whose job ended some other way) and is tried once more.
 * @throws Error when worstMicros/now/ttlMs are not integers >= 0 (ttlMs >= 1).
 */
export async function reserveBudget(c: StoreCtx, rootId: number, worstMicros: number, now: number, ttlMs: number = DEFAULT_RESERVATION_TTL_MS, jobId?: number, call?: PendingCall, holder?: number): Promise<BudgetReservationResult | null> {
  assertInt('rootId', rootId, 1);
  assertInt('worstMicros', worstMicros, 0);
  assertInt('now', now, 0);
  assertInt('ttlMs', ttlMs, 1);
  if (jobId !== undefined) assertInt('jobId', jobId, 1);
  if (holder !== undefined) assertInt('holder', holder, 1);
  const callJson = encodePendingCall(call);
  let subLimited = jobId !== undefined;
  let last: TreeBudget | null = null;
  let synced = false;
  // A tree UPDATE that matched no row means "no row yet" or "does not fit" — or that the row
  // was created (or money given back) by a concurrent call between our UPDATE and now. Only
  // figures read after the UPDATE that really do not fit are a refusal; otherwise try again.
  for (let attempt = 0; attempt < 8; attempt++) {
    let r: BudgetReservationResult | null = null;
    // the calling holder's own part of the held room, as the last try read it
    let own = 0;
    if (subLimited) {
      const sub = await reserveWithSubLimits(c, rootId, jobId!, worstMicros, now, ttlMs, callJson, holder);
      if (sub === 'no-sub-limit') subLimited = false;
      else r = sub;
    }
    if (!subLimited) {
      // PostgreSQL: one statement, no transaction, unless a holder's own hold is read first
      if (holder === undefined && c.dialect === 'postgres') r = await reservePg(c.db, rootId, worstMicros, now, ttlMs, callJson, 0);
      else {
        r = await c.db.transaction().execute(async (trx) => {
          if (holder !== undefined) {
            await lockTree(trx, rootId);
            own = await ownHold(trx, holder);
          }
          const res = c.dialect === 'postgres' ? await reservePg(trx, rootId, worstMicros, now, ttlMs, callJson, own) : await reserveSqlite(trx, rootId, worstMicros, now, ttlMs, callJson, own);
          // the holder's call is admitted: its reservation keeps the room from here (budget-holds.ts)
          if (res?.ok && own > 0) await endHoldAtReservation(trx, rootId, holder!);
          return res;
        });
      }
    }
    if (r?.ok) return r;
    if (r) {
      // a sub-limit's refusal (job-budgets.ts): while others hold room, the holds are written
      // again from the jobs and the call tried once more
      if (synced || !(r.budget.heldMicros || (r.budget as RefusingBudget).shortOnPath?.some((b) => b.heldMicros))) return r;
      synced = true;
      if (await syncTreeHolds(c, rootId)) continue;
      return r;
    }
    const cur = await c.db.selectFrom('tree_budgets').select(COLS).where('root_id', '=', rootId).executeTakeFirst();
    if (!cur) {
      if (!(await ensureRow(c, rootId, now))) return null;
      continue;
    }
    last = toBudget(cur, own);
    if (doesNotFit(last, worstMicros)) {
      // refused while others hold room: the holds written again from the jobs, then once more
      if (last.heldMicros && !synced) {
        synced = true;
        if (await syncTreeHolds(c, rootId)) continue;
      }
      return { ok: false, budget: last };
    }
  }
  return last ? { ok: false, budget: last } : null;
}

/** SQLite: the conditional UPDATE and the reservation row, in the caller's transaction `trx` (one writer). Null when it does not fit or the tree has no row. */
async function reserveSqlite(trx: Db, rootId: number, worstMicros: number, now: number, ttlMs: number, callJson: string | null, own: number): Promise<BudgetReservationResult | null> {
  const row = await trx
    .updateTable('tree_budgets')
    .set({ reserved_micros: sql<number>`reserved_micros + ${worstMicros}`, updated_at: now })
    .where('root_id', '=', rootId)
    .where(sql<boolean>`spent_micros + reserved_micros + held_micros - ${own} + ${worstMicros} <= limit_micros`)
    .returning(COLS)
    .executeTakeFirst();
  if (!row) return null;
  const res = await trx
    .insertInto('budget_reservations')
    .values({ root_id: rootId, micros: worstMicros, created_at: now, expires_at: now + ttlMs, call: callJson })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { ok: true as const, budget: toBudget(row, own), reservationId: num(res.id) };
}

/**
 * PostgreSQL: the reservation as ONE statement (one round trip): the conditional UPDATE and the
 * reservation INSERT as data-modifying CTEs; the UPDATE's row lock and re-check hold as for a
 * lone UPDATE. Null when the call does not fit (or the tree has no row yet).
 */
async function reservePg(trx: Db, rootId: number, worst: number, now: number, ttlMs: number, callJson: string | null, own: number): Promise<BudgetReservationResult | null> {
  const r = await sql<Row & { id: number | string }>`
    with upd as (
      update tree_budgets set reserved_micros = reserved_micros + ${worst}::bigint, updated_at = ${now}::bigint
      where root_id = ${rootId} and spent_micros + reserved_micros + held_micros - ${own}::bigint + ${worst}::bigint <= limit_micros
      returning root_id, limit_micros, spent_micros, reserved_micros, held_micros
    ), ins as (
      insert into budget_reservations (root_id, micros, created_at, expires_at, call)
      select root_id, ${worst}::bigint, ${now}::bigint, ${now + ttlMs}::bigint, ${callJson}::text from upd
      returning id
    )
    select upd.root_id, upd.limit_micros, upd.spent_micros, upd.reserved_micros, upd.held_micros, ins.id from upd cross join ins`.execute(trx);
  const row = r.rows[0];
  return row ? { ok: true, budget: toBudget(row, own), reservationId: num(row.id) } : null;
}

/**
 * How a settle found its reservation: still `held` (released now), `swept` (the sweep had
 * charged it as unknown usage, H7: that charge and its ledger row are replaced by this settle's)
 * or `gone` (released without a marker: the sweep's marker expired, or never reserved).
 */
export type SettleFound = 'held' | 'swept' | 'gone';

/**
 * PostgreSQL: the settle (and ledger row) as ONE statement (one round trip), data-modifying
 * CTEs: delete the reservation, give back what it held (if this statement deleted it and the
 * sweep had not charged it), charge the cost less what the sweep charged, drop the sweep's
 * ledger row, append the call.
 */
async function settlePg(c: StoreCtx, rootId: number, reservationId: number, cost: number, now: number, values: Record<string, unknown> | null): Promise<SettleFound> {
  const ins = values
    ? sql`, ins as (insert into model_calls (${sql.join(Object.keys(values).map((k) => sql.ref(k)))}) values (${sql.join(Object.values(values))}) returning 1)`
    : sql``;
  const r = await sql<{ held: number | string; found: number | string; call_id: number | string | null; dropped: number | string }>`
    with held as (
      delete from budget_reservations where id = ${reservationId} and root_id = ${rootId} returning micros, job_ids, charged_micros, call_id
    ), upd as (
      update tree_budgets set
        reserved_micros = greatest(reserved_micros - coalesce((select sum(micros) from held where charged_micros is null), 0), 0),
        spent_micros = greatest(spent_micros + ${cost}::bigint - coalesce((select sum(charged_micros) from held), 0), 0), updated_at = ${now}::bigint
      where root_id = ${rootId} returning 1
    ), jupd as (
      update job_budgets set
        reserved_micros = greatest(reserved_micros - coalesce((select sum(micros) from held where charged_micros is null), 0), 0),
        spent_micros = greatest(spent_micros + ${cost}::bigint - coalesce((select sum(charged_micros) from held), 0), 0), updated_at = ${now}::bigint
      where job_id = any(string_to_array((select job_ids from held limit 1), ',')::bigint[]) and exists (select 1 from upd)
      returning 1
    ), dropped as (
      delete from model_calls where id = (select call_id from held limit 1) returning 1
    )${ins}
    select count(*) filter (where charged_micros is null) as held, count(*) as found, max(call_id) as call_id, (select count(*) from dropped) as dropped from held`.execute(c.db);
  const row = r.rows[0];
  if (!row || Number(row.found) === 0) return 'gone';
  if (Number(row.held) > 0) return 'held';
  // The sweep's ledger row may have been committed after this statement's snapshot (it waited
  // for the sweep's lock): not seen by `dropped`, so deleted now.
  if (row.call_id !== null && Number(row.dropped) === 0) await c.db.deleteFrom('model_calls').where('id', '=', num(row.call_id)).execute();
  return 'swept';
}

/**
 * Settles reservation `reservationId` of tree `rootId`, in ONE transaction: deletes the
 * reservation row; if this call deleted it, reserved -= its micros (else the sweeper already
 * gave them back); spent += costMicros (0 releases a failed call); and, with `call`, appends
 * the call's ledger row (model-calls.ts). Spent may exceed the limit by the estimate's error.
 * H7: when the sweep had already charged the reservation as unknown usage (its marker row is
 * still there), that charge is taken back and its ledger row deleted: the call counts once, at
 * its real cost. A settle that finds its reservation gone without a marker still charges the
 * sub-limits on the call's job path (job-budgets.ts chargeSubLimitsLate), after the transaction.
 * @returns whether the reservation was still held (false when swept or gone).
 * @throws Error on non-integer or negative amounts, or a bad `call` field (nothing written).
 */
export async function settleBudget(c: StoreCtx, rootId: number, reservationId: number, costMicros: number, now: number, call?: NewModelCall): Promise<boolean> {
  assertInt('rootId', rootId, 1);
  assertInt('reservationId', reservationId, 1);
  assertInt('costMicros', costMicros, 0);
  const values = call ? modelCallValues(call) : null;
  const found = c.dialect === 'postgres' ? await settlePg(c, rootId, reservationId, costMicros, now, values as Record<string, unknown> | null) : await settleSqlite(c, rootId, reservationId, costMicros, now, values);
  if (found === 'gone' && call) await chargeSubLimitsLate(c.db, call.jobId, costMicros, now);
  return found === 'held';
}

/** SQLite: the settle of {@link settleBudget} in one transaction. */
async function settleSqlite(c: StoreCtx, rootId: number, reservationId: number, costMicros: number, now: number, values: ReturnType<typeof modelCallValues> | null): Promise<SettleFound> {
  return c.db.transaction().execute(async (trx) => {
    const held = await trx.deleteFrom('budget_reservations').where('id', '=', reservationId).where('root_id', '=', rootId).returning(['micros', 'job_ids', 'charged_micros', 'call_id']).executeTakeFirst();
    const swept = held?.charged_micros !== undefined && held.charged_micros !== null ? num(held.charged_micros) : null;
    // what is given back to `reserved` (nothing when the sweep did it), and the change to `spent`
    const micros = held && swept === null ? num(held.micros) : 0;
    const delta = costMicros - (swept ?? 0);
    await trx
      .updateTable('tree_budgets')
      .set({
        reserved_micros: sql<number>`case when reserved_micros >= ${micros} then reserved_micros - ${micros} else 0 end`,
        spent_micros: sql<number>`max(spent_micros + ${delta}, 0)`,
        updated_at: now,
      })
      .where('root_id', '=', rootId)
      .execute();
    await settleJobRows(trx, parseJobIds(held?.job_ids), micros, delta, now);
    if (held?.call_id !== undefined && held.call_id !== null) await trx.deleteFrom('model_calls').where('id', '=', num(held.call_id)).execute();
    if (values) await trx.insertInto('model_calls').values(values).execute();
    return held === undefined ? 'gone' : swept === null ? 'held' : 'swept';
  });
}

/**
 * Moves reservation `reservationId`'s expiry to `expiresAt` (epoch ms): its call is still
 * running (a stream may outlast the TTL), so the sweeper must not give its micros back. One
 * UPDATE. @returns false when the reservation is gone (settled, or swept already).
 */
export async function extendBudgetReservation(c: StoreCtx, reservationId: number, expiresAt: number): Promise<boolean> {
  assertInt('reservationId', reservationId, 1);
  assertInt('expiresAt', expiresAt, 0);
  // a reservation the sweep already charged (H7) is not live any more: its marker keeps its own expiry
  const r = await c.db.updateTable('budget_reservations').set({ expires_at: expiresAt }).where('id', '=', reservationId).where('charged_micros', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** A top-up would take a tree's limit past the cap it was given ({@link topUpBudget}). */
export class BudgetCapError extends Error {
  constructor(
    /** The tree's limit when the top-up was refused, micro-dollars. */
    readonly limitMicros: number,
    /** The cap, micro-dollars. */
    readonly capMicros: number,
  ) {
    super(`store: a top-up would take the tree's budget past its cap (${limitMicros} + more > ${capMicros} micro-dollars)`);
    this.name = 'BudgetCapError';
  }
}

/**
 * Adds `addMicros` to the tree's limit (and to the root job's `budget_micros`, so job views
 * show the new limit), one transaction; with `capMicros`, only if the new limit is at most that,
 * checked in the same statement (two top-ups at once cannot pass it together). Null when
 * `rootId` is not a root job.
 * @throws Error when addMicros is not an integer >= 1; {@link BudgetCapError} (with the limit
 *   as it is) when the cap would be passed.
 */
export async function topUpBudget(c: StoreCtx, rootId: number, addMicros: number, now: number, capMicros?: number): Promise<TreeBudget | null> {
  assertInt('rootId', rootId, 1);
  assertInt('addMicros', addMicros, 1);
  if (capMicros !== undefined) assertInt('capMicros', capMicros, 1);
  if (!(await ensureRow(c, rootId, now))) return null;
  return c.db.transaction().execute(async (trx) => {
    let q = trx
      .updateTable('tree_budgets')
      .set({ limit_micros: sql<number>`limit_micros + ${addMicros}`, updated_at: now })
      .where('root_id', '=', rootId);
    if (capMicros !== undefined) q = q.where(sql<boolean>`limit_micros + ${addMicros} <= ${capMicros}`);
    const row = await q.returning(COLS).executeTakeFirst();
    if (!row) {
      const cur = await trx.selectFrom('tree_budgets').select('limit_micros').where('root_id', '=', rootId).executeTakeFirstOrThrow();
      throw new BudgetCapError(num(cur.limit_micros), capMicros!);
    }
    await trx.updateTable('jobs').set({ budget_micros: num(row.limit_micros) }).where('id', '=', rootId).execute();
    return toBudget(row);
  });
}
