import { sql, type Kysely, type Transaction } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { Database } from './schema.js';
import type { BudgetReservationResult, TreeBudget } from './types.js';
import { budgetFigures, doesNotFit } from './budget-figures.js';
import { endHoldAtReservation, lockTree, ownHold } from './budget-holds.js';

/**
 * Sub-limits of child jobs (issue 6). A child started with `budget_usd` has `budget_micros > 0`
 * and a parent; its `job_budgets` row (created lazily from budget_micros) is charged by every
 * model call of the child and of its descendants, next to the tree's `tree_budgets` row. A
 * call reserves its worst case against the tree AND every sub-limit on its path in ONE
 * transaction of conditional UPDATEs (`spent + reserved + w <= limit`, as budgets.ts): if any
 * does not fit, the transaction rolls back and nothing is held. Rows are locked in one global
 * order — the tree's row, then job rows by ascending id (an ancestor's id is smaller) — as by
 * settle and the sweeper, so concurrent PostgreSQL transactions never deadlock. Money is
 * integer micro-dollars, `now` epoch ms.
 */

type Db = Kysely<Database> | Transaction<Database>;
type Row = { job_id: number; root_id: number; limit_micros: number | string; spent_micros: number | string; reserved_micros: number | string; held_micros: number | string };
const COLS = ['job_id', 'root_id', 'limit_micros', 'spent_micros', 'reserved_micros', 'held_micros'] as const;

/** The figures of a sub-limit's row (budget-figures.ts), less `own` µ$ of its held room: the calling job's own hold. */
function toBudget(r: Row, own = 0): TreeBudget {
  return budgetFigures(num(r.root_id), num(r.job_id), num(r.limit_micros), num(r.spent_micros), num(r.reserved_micros), num(r.held_micros), own);
}

/** The jobs on `jobId`'s path (itself, then its ancestors) that have a sub-limit, ascending id. */
export async function subLimitChain(db: Db, jobId: number): Promise<{ id: number; rootId: number; budgetMicros: number }[]> {
  const out: { id: number; rootId: number; budgetMicros: number }[] = [];
  let cur: number | null = jobId;
  for (let depth = 0; cur !== null && depth < 1000; depth++) {
    const j = await db.selectFrom('jobs').select(['id', 'parent_id', 'root_id', 'budget_micros']).where('id', '=', cur).executeTakeFirst();
    if (!j) break;
    if (j.parent_id !== null && num(j.budget_micros) > 0) out.push({ id: num(j.id), rootId: num(j.root_id), budgetMicros: num(j.budget_micros) });
    cur = j.parent_id === null ? null : num(j.parent_id);
  }
  return out.sort((a, b) => a.id - b.id);
}

async function ensureRows(db: Db, chain: { id: number; rootId: number; budgetMicros: number }[], now: number): Promise<void> {
  for (const j of chain) {
    await db
      .insertInto('job_budgets')
      .values({ job_id: j.id, root_id: j.rootId, limit_micros: j.budgetMicros, spent_micros: 0, reserved_micros: 0, updated_at: now, held_micros: 0 })
      .onConflict((oc) => oc.column('job_id').doNothing())
      .execute();
  }
}

/** Job `jobId`'s sub-limit budget (row created if missing), or null when it has none. */
export async function getJobBudget(c: StoreCtx, jobId: number, now: number): Promise<TreeBudget | null> {
  assertInt('jobId', jobId, 1);
  const own = (await subLimitChain(c.db, jobId)).filter((j) => j.id === jobId);
  if (!own.length) return null;
  await ensureRows(c.db, own, now);
  const row = await c.db.selectFrom('job_budgets').select(COLS).where('job_id', '=', jobId).executeTakeFirstOrThrow();
  return toBudget(row);
}

class NoFit extends Error {
  constructor() {
    super('budget: does not fit');
  }
}

/**
 * The figures of a refused call's budget ({@link reserveWithSubLimits}): those of the budget on
 * the path with least room, and — only when more than one budget on the path is short —
 * `shortOnPath`, every short one (the named one included), the tree's first (`jobId` absent),
 * then the sub-limits by ascending job id: the order to top them up in (a sub-limit never grows
 * past what is left above it). µ$.
 */
export interface RefusingBudget extends TreeBudget {
  shortOnPath?: TreeBudget[];
}

/**
 * The refusal of a `worst` µ$ call on a path whose budgets are `path` (the tree's first, then
 * the sub-limits by ascending job id): the short ones (`spent + reserved + worst > limit`, as
 * the reservation checks), the one with least room named (a tie: the one nearest the calling
 * job). Null when none is short (money was given back meanwhile: try again).
 */
export function refusingBudget(path: readonly TreeBudget[], worst: number): RefusingBudget | null {
  const short = path.filter((b) => doesNotFit(b, worst));
  if (!short.length) return null;
  const least = short.reduce((a, b) => (b.remainingMicros <= a.remainingMicros ? b : a));
  return short.length > 1 ? { ...least, shortOnPath: short } : { ...least };
}

/**
 * Reserves `worst` µ$ against tree `rootId` and every sub-limit on job `jobId`'s path, one
 * transaction (see the top of this file), plus the `budget_reservations` row naming the
 * job rows held (`job_ids`) and its call (`callJson`, pending-call.ts; H7). Null when the path has no sub-limit (the caller reserves against
 * the tree alone) or the tree has no row yet (the caller creates it and retries).
 * @returns ok with the tree's figures, or `{ ok: false, budget }` when it does not fit, with
 *   the figures of the budget on the path with least room among those the call does not fit
 *   (`budget.jobId` set when it is a sub-limit; {@link RefusingBudget}: `shortOnPath` when
 *   several are short). Null (the caller reads the tree and tries again) also when, read after
 *   the refusal, every budget has room again. `holder` (the calling job, when its row says it
 *   may hold room from a resume): its own hold, read after the tree's lock, does not count
 *   against it, and ends when the call is admitted (budget-holds.ts endHoldAtReservation);
 *   `held` counts on every budget otherwise.
 */
export async function reserveWithSubLimits(c: StoreCtx, rootId: number, jobId: number, worst: number, now: number, ttlMs: number, callJson: string | null = null, holder?: number): Promise<BudgetReservationResult | 'no-sub-limit' | null> {
  const chain = await subLimitChain(c.db, jobId);
  if (!chain.length) return 'no-sub-limit';
  await ensureRows(c.db, chain, now);
  const treeCols = ['root_id', 'limit_micros', 'spent_micros', 'reserved_micros', 'held_micros'] as const;
  // the holder's own part of the held room (the same on every budget of its path)
  let own = 0;
  try {
    return await c.db.transaction().execute(async (trx) => {
      if (holder !== undefined) {
        await lockTree(trx, rootId);
        own = await ownHold(trx, holder);
      }
      const tree = await trx
        .updateTable('tree_budgets')
        .set({ reserved_micros: sql<number>`reserved_micros + ${worst}`, updated_at: now })
        .where('root_id', '=', rootId)
        .where(sql<boolean>`spent_micros + reserved_micros + held_micros - ${own} + ${worst} <= limit_micros`)
        .returning(treeCols)
        .executeTakeFirst();
      if (!tree) throw new NoFit();
      for (const j of chain) {
        const row = await trx
          .updateTable('job_budgets')
          .set({ reserved_micros: sql<number>`reserved_micros + ${worst}`, updated_at: now })
          .where('job_id', '=', j.id)
          .where(sql<boolean>`spent_micros + reserved_micros + held_micros - ${own} + ${worst} <= limit_micros`)
          .returning('job_id')
          .executeTakeFirst();
        if (!row) throw new NoFit();
      }
      const res = await trx
        .insertInto('budget_reservations')
        .values({ root_id: rootId, micros: worst, created_at: now, expires_at: now + ttlMs, job_ids: chain.map((j) => j.id).join(','), call: callJson })
        .returning('id')
        .executeTakeFirstOrThrow();
      const budget = budgetFigures(rootId, undefined, num(tree.limit_micros), num(tree.spent_micros), num(tree.reserved_micros), num(tree.held_micros), own);
      // the holder's call is admitted: its reservation keeps the room from here (budget-holds.ts)
      if (own > 0) await endHoldAtReservation(trx, rootId, holder!);
      return { ok: true as const, budget, reservationId: num(res.id) };
    });
  } catch (err) {
    if (!(err instanceof NoFit)) throw err;
    // Every budget on the path as it is now: the refusal names the one with least room among
    // those the call does not fit, and lists the others (issue 6: the hint must name each).
    const tree = await c.db.selectFrom('tree_budgets').select(treeCols).where('root_id', '=', rootId).executeTakeFirst();
    if (!tree) return null; // budgets.ts creates the tree's row and tries again
    const rows = await c.db.selectFrom('job_budgets').select(COLS).where('job_id', 'in', chain.map((j) => j.id)).orderBy('job_id').execute();
    const treeBudget = budgetFigures(rootId, undefined, num(tree.limit_micros), num(tree.spent_micros), num(tree.reserved_micros), num(tree.held_micros), own);
    const refusing = refusingBudget([treeBudget, ...rows.map((r) => toBudget(r, own))], worst);
    return refusing ? { ok: false, budget: refusing } : null;
  }
}

/** Parses `budget_reservations.job_ids` ("12,15"; null/empty = none). */
export function parseJobIds(s: string | null | undefined): number[] {
  return s ? s.split(',').map(Number).filter((n) => Number.isSafeInteger(n) && n > 0) : [];
}

/**
 * Gives back `micros` of reservation to the job rows `ids` and charges `cost` (settle and
 * sweeper). `cost` may be negative (a late settle taking back the sweep's larger charge, H7):
 * spent never goes below 0. Ascending id order.
 */
export async function settleJobRows(db: Db, ids: number[], micros: number, cost: number, now: number): Promise<void> {
  for (const id of [...ids].sort((a, b) => a - b)) {
    await db
      .updateTable('job_budgets')
      .set({
        reserved_micros: sql<number>`case when reserved_micros >= ${micros} then reserved_micros - ${micros} else 0 end`,
        spent_micros: sql<number>`case when spent_micros + ${cost} >= 0 then spent_micros + ${cost} else 0 end`,
        updated_at: now,
      })
      .where('job_id', '=', id)
      .execute();
  }
}

/**
 * A settle whose reservation was already given back by the sweeper (it held nothing, so it
 * does not know which job rows the reservation named): the tree was charged by the settle;
 * this charges `cost` µ$ to the sub-limits on job `jobId`'s path too, so a late call still
 * counts against its child's sub-limit. Nothing when the path has none or cost is 0.
 */
export async function chargeSubLimitsLate(db: Db, jobId: number, cost: number, now: number): Promise<void> {
  if (cost <= 0) return;
  const chain = await subLimitChain(db, jobId);
  if (chain.length) await settleJobRows(db, chain.map((j) => j.id), 0, cost, now);
}

/**
 * Raises child `jobId`'s sub-limit by `addMicros` (and its `budget_micros`), one transaction,
 * but never past what is left above it: the new remaining must stay <= the tree's remaining
 * and each sub-limited ancestor's remaining. Null when the job has no sub-limit.
 * @returns `{ ok: false, maxAddMicros }` (nothing changed) when `addMicros` is more than that.
 * @throws Error when addMicros is not an integer >= 1.
 */
export async function topUpJobBudget(c: StoreCtx, jobId: number, addMicros: number, now: number): Promise<{ ok: true; budget: TreeBudget } | { ok: false; maxAddMicros: number } | null> {
  assertInt('jobId', jobId, 1);
  assertInt('addMicros', addMicros, 1);
  const chain = await subLimitChain(c.db, jobId);
  const own = chain.find((j) => j.id === jobId);
  if (!own) return null;
  await ensureRows(c.db, chain, now);
  return c.db.transaction().execute(async (trx) => {
    // the tree's row lock first, as every transaction that writes the tree's budgets takes it
    // (budget-holds.ts): a resume writing held room on this sub-limit waits, never deadlocks
    await lockTree(trx, own.rootId);
    const tree = await trx.selectFrom('tree_budgets').select(['limit_micros', 'spent_micros', 'reserved_micros', 'held_micros']).where('root_id', '=', own.rootId).executeTakeFirst();
    const treeLeft = tree ? Math.max(0, num(tree.limit_micros) - num(tree.spent_micros) - num(tree.reserved_micros) - num(tree.held_micros)) : 0;
    const rows = (await trx.selectFrom('job_budgets').select(COLS).where('job_id', 'in', chain.map((j) => j.id)).execute()).map(toBudget);
    const mine = rows.find((r) => r.jobId === jobId)!;
    const aboveLeft = Math.min(treeLeft, ...rows.filter((r) => r.jobId !== jobId).map((r) => r.remainingMicros));
    const maxAdd = Math.max(0, aboveLeft - mine.remainingMicros);
    if (addMicros > maxAdd) return { ok: false as const, maxAddMicros: maxAdd };
    const row = await trx
      .updateTable('job_budgets')
      .set({ limit_micros: sql<number>`limit_micros + ${addMicros}`, updated_at: now })
      .where('job_id', '=', jobId)
      .returning(COLS)
      .executeTakeFirstOrThrow();
    await trx.updateTable('jobs').set({ budget_micros: num(row.limit_micros) }).where('id', '=', jobId).execute();
    return { ok: true as const, budget: toBudget(row) };
  });
}
