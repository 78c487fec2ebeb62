import { sql, type ExpressionBuilder, type Kysely, type Transaction } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { toJobRow } from './codec.js';
import { modelCallValues } from './model-calls.js';
import { chargeSubLimitsLate, parseJobIds, reserveWithSubLimits, settleJobRows, type RefusingBudget } from './job-budgets.js';
import { encodePendingCall } from './pending-call.js';
import { BUDGET_RESUME_PENDING, budgetPausedMayResume, refusedCallMicros } from './budget-resume.js';
import type { BudgetReservationResult, JobRow, NeedCall, NewModelCall, PendingCall, TreeBudget } from './types.js';
import type { Database } from './schema.js';
import { budgetFigures, doesNotFit } from './budget-figures.js';
import { inJobTreeLock, lockTree, ownHold, stillFitting, syncBudgetHolds, syncTreeHolds } from './budget-holds.js';

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
 * lock and not counted against it (budget-holds.ts ownHold). A call refused while the budget
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
          return c.dialect === 'postgres' ? reservePg(trx, rootId, worstMicros, now, ttlMs, callJson, own) : reserveSqlite(trx, rootId, worstMicros, now, ttlMs, callJson, own);
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

/**
 * A running (or assigned) attempt whose tree ran out of budget → `paused` with endReason
 * `budget`; its token stops authenticating (the resumed attempt gets a new one) but is kept
 * so the gateway can still answer it with the budget refusal. `needMicros` (µ$), the worst
 * case of the refused call, is kept in `paused_need_micros` (0024) for the resume rule
 * (budget-resume.ts); absent, it is read from `reason` now (the gateway's message: "this call
 * may cost up to $…"), null when that names none. `needCall` (with `needMicros`): what the need
 * was worked out from, kept in `paused_need_call` (0027) so it is priced again when prices change. Fenced by attempt. Returns the updated row,
 * or null when the job was not in that attempt/status.
 * @throws Error when jobId/attempt/now/needMicros are not integers in range.
 */
export async function pauseJobForBudget(c: StoreCtx, jobId: number, attempt: number, reason: string, now: number, needMicros?: number, needCall?: NeedCall): Promise<JobRow | null> {
  assertInt('jobId', jobId, 1);
  assertInt('attempt', attempt, 0);
  assertInt('now', now, 0);
  if (needMicros !== undefined) assertInt('needMicros', needMicros, 0);
  // a resumed job refused before its call was recorded held room: its hold ends here (budget-holds.ts)
  return inJobTreeLock(c, jobId, async (trx, rootId) => {
    const row = await trx
      .updateTable('jobs')
      // The token's hash stays: it no longer authenticates (not a live status), but the gateway
      // finds the paused job by it to answer the budget refusal, not a 401 (jobs.ts findPausedJobByTokenHash).
      .set({ status: 'paused', end_reason: 'budget', error: reason.slice(0, 2000), paused_need_micros: needMicros ?? refusedCallMicros(reason), paused_need_call: needMicros !== undefined && needCall ? JSON.stringify(needCall) : null })
      .where('id', '=', jobId)
      .where('attempt', '=', attempt)
      .where('status', 'in', ['assigned', 'running'])
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    await syncBudgetHolds(trx, rootId);
    return toJobRow(c.codec, row);
  });
}

/**
 * The columns of a budget-paused job going back to `queued` to resume where it stopped (a
 * top-up, resumeBudgetPausedJobs and endPausedAttempt): its session resumed, its workspace and
 * HOME kept (workspace_job_id: its own, unless it already used another job's; the runner reuses
 * it even when the harness reported no session), pinned to the
 * runner that ran it (0004: the session's workspace lives there: claim only there), the runner
 * itself cleared (a queued job is on no runner: jobs.ts transitionPlan; the SET reads the old
 * value for the pin), reason, error, assignment and token cleared, and the paused attempt's
 * end (finished_at) cleared: the new attempt has not ended.
 */
const resumeColumns = (eb: ExpressionBuilder<Database, 'jobs'>) =>
  ({
    status: 'queued',
    resume_session_id: eb.fn.coalesce('session_id', 'resume_session_id'),
    // its own workspace (and HOME) again, also for a harness that reports no session
    workspace_job_id: eb.fn.coalesce('workspace_job_id', 'id'),
    pinned_runner_id: eb.fn.coalesce('runner_id', 'pinned_runner_id'),
    runner_id: null,
    end_reason: null,
    error: null,
    assigned_at: null,
    token_hash: null,
    finished_at: null,
    // kept: the resumed job holds the room for this call until its first call is recorded (budget-resume.ts resumedNeedHolds, budget-holds.ts)
  }) as const;

/**
 * Every job of the tree that is `paused` for budget goes back to `queued`, to resume where it
 * stopped: resume_session_id = its session id (the harness continues the conversation),
 * pinned to the runner that ran it (its workspace is there; claim honours the pin), error
 * and end reason cleared, token and assignment cleared (the next claim makes a new attempt).
 * With `jobIds`, only those jobs (the ones budget-resume.ts's rule lets resume: the server
 * passes them, server/budget-pause.ts) whose refused call still fits, checked under the tree's
 * lock (budget-holds.ts stillFitting: the rule read the room before); without, every one
 * (store tests). One transaction: the tree's lock, one UPDATE, the held room written
 * (budget-holds.ts). Returns the resumed jobs.
 */
export async function resumeBudgetPausedJobs(c: StoreCtx, rootId: number, now: number, jobIds?: readonly number[]): Promise<JobRow[]> {
  assertInt('rootId', rootId, 1);
  assertInt('now', now, 0);
  if (jobIds && !jobIds.length) return [];
  // the resumed jobs hold the room of their refused calls (budget-holds.ts): written in the same transaction
  const rows = await c.db.transaction().execute(async (trx) => {
    await lockTree(trx, rootId);
    // the granted ones whose call still fits: the rule read the room before this transaction
    const ids = jobIds ? await stillFitting(trx, rootId, jobIds) : undefined;
    if (ids && !ids.length) return [];
    let q = trx
      .updateTable('jobs')
      .set(resumeColumns)
      .where('root_id', '=', rootId)
      .where('status', '=', 'paused')
      .where('end_reason', '=', 'budget');
    if (ids) q = q.where('id', 'in', ids);
    const out = await q.returningAll().execute();
    if (out.length) await syncBudgetHolds(trx, rootId);
    return out;
  });
  return rows.map((r) => toJobRow(c.codec, r)).sort((a, b) => a.id - b.id);
}

export { BUDGET_RESUME_PENDING };

/**
 * The first half of a top-up's resume: every job of the tree paused for budget whose attempt
 * still holds its runner (finished_at null, runner set: the pause told the runner to stop it
 * and it has not reported the process gone) gets endReason {@link BUDGET_RESUME_PENDING}, so
 * {@link resumeBudgetPausedJobs} (which takes endReason `budget` only) leaves it paused and
 * {@link endPausedAttempt} requeues it once its process has exited. With `jobIds`, only
 * those jobs whose call still fits (as {@link resumeBudgetPausedJobs}); the held room is
 * written in the same transaction. Returns them, id ascending.
 */
export async function deferHeldBudgetResumes(c: StoreCtx, rootId: number, jobIds?: readonly number[]): Promise<JobRow[]> {
  assertInt('rootId', rootId, 1);
  if (jobIds && !jobIds.length) return [];
  // a granted resume holds the room of its refused call (budget-holds.ts): written in the same transaction
  const rows = await c.db.transaction().execute(async (trx) => {
    await lockTree(trx, rootId);
    // the granted ones whose call still fits (as resumeBudgetPausedJobs)
    const ids = jobIds ? await stillFitting(trx, rootId, jobIds) : undefined;
    if (ids && !ids.length) return [];
    let q = trx
      .updateTable('jobs')
      .set({ end_reason: BUDGET_RESUME_PENDING })
      .where('root_id', '=', rootId)
      .where('status', '=', 'paused')
      .where('end_reason', '=', 'budget')
      .where('finished_at', 'is', null)
      .where('runner_id', 'is not', null);
    if (ids) q = q.where('id', 'in', ids);
    const out = await q.returningAll().execute();
    if (out.length) await syncBudgetHolds(trx, rootId);
    return out;
  });
  return rows.map((r) => toJobRow(c.codec, r)).sort((a, b) => a.id - b.id);
}

/**
 * The runner reported that attempt `attempt` of paused job `jobId` ended (its process is
 * gone): finished_at = now, which frees the runner slot the attempt held (the capacity reads
 * count a paused job with finished_at null). When a top-up came while it was held
 * (endReason {@link BUDGET_RESUME_PENDING}) the job goes back to `queued` at once, exactly as
 * {@link resumeBudgetPausedJobs} would have done (same session, pinned to this runner) — if
 * every budget on its path still has room for its refused call (budget-resume.ts: other jobs
 * may have spent the top-up meanwhile); else it stays paused with endReason `budget` again.
 * `sessionId` (the attempt's `job.finished` one, if any) becomes the job's session id, the one
 * the resume continues. Fenced by attempt; one transaction. Returns the row after it, or null
 * when the job is not paused at that attempt with its process held (already ended, resumed,
 * cancelled, ...).
 */
export async function endPausedAttempt(c: StoreCtx, jobId: number, attempt: number, now: number, sessionId?: string): Promise<JobRow | null> {
  assertInt('jobId', jobId, 1);
  assertInt('attempt', attempt, 1);
  assertInt('now', now, 0);
  // a granted resume's hold goes on as the resumed job's, or ends (budget-holds.ts)
  return inJobTreeLock(c, jobId, async (trx, rootId) => {
    const row = await trx
      .updateTable('jobs')
      // A harness may name its session only in its final report (the command harness): keep it for the resume.
      .set(sessionId ? { finished_at: now, session_id: sessionId } : { finished_at: now })
      .where('id', '=', jobId)
      .where('attempt', '=', attempt)
      .where('status', '=', 'paused')
      .where('finished_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    if (row.end_reason !== BUDGET_RESUME_PENDING) return toJobRow(c.codec, row);
    // The room the top-up granted may have been spent meanwhile: the same rule as the top-up (budget-resume.ts).
    if (!(await budgetPausedMayResume(trx, { id: jobId, root_id: row.root_id, error: row.error, paused_need_micros: row.paused_need_micros }, null))) {
      const back = await trx.updateTable('jobs').set({ end_reason: 'budget' }).where('id', '=', jobId).returningAll().executeTakeFirstOrThrow();
      await syncBudgetHolds(trx, rootId);
      return toJobRow(c.codec, back);
    }
    const resumed = await trx
      .updateTable('jobs')
      .set(resumeColumns)
      .where('id', '=', jobId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await syncBudgetHolds(trx, rootId);
    return toJobRow(c.codec, resumed);
  });
}
