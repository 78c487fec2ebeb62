import { sql, type Kysely, type Transaction } from 'kysely';
import { num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { BUDGET_RESUME_PENDING, hold, mayResumeForBudget, pathBudgets, pausedNeedMicros, withHolds, type BudgetHolds } from './budget-resume.js';
import type { Database } from './schema.js';

/**
 * The room budgets hold for resumed jobs, counted by the gateway's reservation (issue 3; fresh
 * tester: a running sibling spent the room a top-up had given a paused job, which paused again
 * at its first call). The resume rule (budget-resume.ts) gives a paused job the room of its
 * refused call; until that job's call is admitted (its reservation takes the room over from
 * there against other calls, {@link endHoldAtReservation}; the resume rule counts it until the
 * call is recorded) the room is the job's, against every budget on its path:
 * `held_micros` of the tree's row and of each sub-limit's row (0027) is the sum of the needs of
 * the tree's HOLDERS:
 * - jobs a top-up resumed that have not made their call yet (budget-resume.ts resumedNeedHolds:
 *   queued, or assigned/running with no ledger row for the attempt, with `paused_need_micros`);
 * - resumes granted but waiting for the paused attempt's process to exit (paused, endReason
 *   `budget_resume`, budget-pause.ts deferHeldBudgetResumes).
 * A reservation fits when `spent + reserved + held − own + worst <= limit`, `own` the calling
 * job's part of `held` (0 but for a holder's own calls). Money is integer micro-dollars.
 *
 * Why a column, written by {@link syncBudgetHolds}, and not a sum read by the reservation: the
 * reservation is one conditional UPDATE of the budget row, which PostgreSQL re-checks on the
 * newest row version after waiting for its lock (READ COMMITTED); a sum in a subquery is read
 * from the statement's snapshot and would miss a hold committed meanwhile. So every
 * transaction that makes or ends a hold takes the tree's row lock FIRST ({@link lockTree}),
 * changes the jobs, then writes the sums read after the lock: two such transactions never
 * interleave, and a reservation sees the sums before or after, never between. The holder's own
 * part is read the same way, after the tree's lock ({@link ownHold}).
 *
 * When a hold ends some way no sync sees (the job failed, was cancelled or lost before its
 * call), `held` stays too high: calls are refused that would fit. The store's reservation then
 * syncs the tree and tries once more before refusing (budgets.ts reserveBudget), and the
 * server syncs when such a job ends (server/budget-pause.ts endedHoldTap) and every 10 s for
 * the trees that wait on budget (server/budget-sweep.ts, {@link listBudgetWaitingTrees}): too
 * high for a moment, never too low. The same sweep prices stored needs again when prices
 * change (budget-needs.ts, server/budget-reprice.ts).
 */

type Db = Kysely<Database> | Transaction<Database>;

/** Takes tree `rootId`'s budget row lock for the rest of the transaction `trx` (PostgreSQL; SQLite has one writer). Nothing when the tree has no row. */
export async function lockTree(trx: Db, rootId: number): Promise<void> {
  await trx.updateTable('tree_budgets').set({ updated_at: sql<number>`updated_at` }).where('root_id', '=', rootId).execute();
}

/**
 * A holder of its tree's budget room (see the top of this file): job id, status, the room it
 * holds on every budget of its path, µ$, and when a top-up last resumed it (`jobs.resumed_at`,
 * epoch ms; null for a job resumed before 0028): a queued holder's hold lapses that long after.
 */
export interface BudgetHolder {
  jobId: number;
  status: string;
  heldMicros: number;
  resumedAt: number | null;
}

/**
 * The holders (see the top of this file) among the jobs of tree `rootId`, or job `jobId` alone
 * when it is one, ascending id, each with its pause's need as the room it holds (1 µ$ at least;
 * for a job paused before 0024, read from its pause reason). A holder whose call the gateway
 * admitted this attempt ({@link endHoldAtReservation}) holds nothing on the budget rows (its
 * call's reservation keeps the room) and is left out, unless `admitted` (the resume rule's view,
 * which counts its need until the call is recorded: {@link stillFitting}). Reads only.
 */
export async function listHolders(db: Db, where: { rootId: number } | { jobId: number }, admitted = false): Promise<BudgetHolder[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['id', 'root_id', 'error', 'paused_need_micros', 'status', 'resumed_at'])
    .where('rootId' in where ? 'root_id' : 'id', '=', 'rootId' in where ? where.rootId : where.jobId)
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'queued'), eb('paused_need_micros', 'is not', null)]),
        eb.and([
          eb('status', 'in', ['assigned', 'running']),
          eb('paused_need_micros', 'is not', null),
          eb.not(eb.exists(eb.selectFrom('model_calls').select('model_calls.id').whereRef('model_calls.job_id', '=', 'jobs.id').whereRef('model_calls.attempt', '=', 'jobs.attempt'))),
          ...(admitted ? [] : [eb.or([eb('hold_admitted_attempt', 'is', null), eb('hold_admitted_attempt', '<>', eb.ref('attempt'))])]),
        ]),
        eb.and([eb('status', '=', 'paused'), eb('end_reason', '=', BUDGET_RESUME_PENDING)]),
      ]),
    )
    .orderBy('id')
    .execute();
  return rows.map((j) => ({ jobId: num(j.id), status: j.status, heldMicros: Math.max(1, pausedNeedMicros(j) ?? 1), resumedAt: numOrNull(j.resumed_at) }));
}

/**
 * Runs `fn` in one transaction that holds the row lock of job `jobId`'s tree first
 * ({@link lockTree}), for the transactions that change holders (see the top of this file).
 * @returns what `fn` returns, or null when there is no such job.
 */
export async function inJobTreeLock<T>(c: StoreCtx, jobId: number, fn: (trx: Transaction<Database>, rootId: number) => Promise<T>): Promise<T | null> {
  const job = await c.db.selectFrom('jobs').select('root_id').where('id', '=', jobId).executeTakeFirst();
  if (!job) return null;
  const rootId = num(job.root_id);
  return c.db.transaction().execute(async (trx) => {
    await lockTree(trx, rootId);
    return fn(trx, rootId);
  });
}

/**
 * What the holders of tree `rootId` hold ({@link listHolders}; `admitted`: as there), per budget:
 * key `tree`, or a sub-limited job's id as text (each holder's room on every budget of its path).
 * µ$. Reads only.
 */
export async function heldByHolders(db: Db, rootId: number, admitted = false): Promise<BudgetHolds> {
  const holds: BudgetHolds = new Map();
  for (const h of await listHolders(db, { rootId }, admitted)) hold(holds, await pathBudgets(db, rootId, h.jobId), h.heldMicros);
  return holds;
}

/**
 * Writes what the holders of tree `rootId` hold ({@link heldByHolders}) into `held_micros` of
 * the tree's row and of its sub-limits' rows (a sub-limit holding room gets its row if it had
 * none). Run it in the transaction that changed the holders, after {@link lockTree} and the
 * change (see the top of this file). Nothing when the tree has no budget row yet (nothing
 * could be reserved against it either: the row is made, with held 0, by the first call or
 * top-up, and a resume needs a top-up, which makes it).
 */
export async function syncBudgetHolds(trx: Db, rootId: number): Promise<void> {
  const holds = await heldByHolders(trx, rootId);
  const tree = holds.get('tree') ?? 0;
  await trx.updateTable('tree_budgets').set({ held_micros: tree }).where('root_id', '=', rootId).where('held_micros', '<>', tree).execute();
  // sub-limit rows in ascending job id, the order every other transaction locks them in
  const subs = [...holds.entries()].filter(([k]) => k !== 'tree').sort(([a], [b]) => Number(a) - Number(b));
  for (const [k, micros] of subs) {
    const jobId = Number(k);
    await trx
      .insertInto('job_budgets')
      .columns(['job_id', 'root_id', 'limit_micros', 'spent_micros', 'reserved_micros', 'updated_at', 'held_micros'])
      .expression((eb) => eb.selectFrom('jobs').select(['id', 'root_id', 'budget_micros', sql.lit(0).as('s'), sql.lit(0).as('r'), sql.lit(0).as('u'), sql.lit(0).as('h')]).where('id', '=', jobId))
      .onConflict((oc) => oc.column('job_id').doNothing())
      .execute();
    await trx.updateTable('job_budgets').set({ held_micros: micros }).where('job_id', '=', jobId).where('held_micros', '<>', micros).execute();
  }
  // sub-limits of the tree that no longer hold anything
  let q = trx.updateTable('job_budgets').set({ held_micros: 0 }).where('root_id', '=', rootId).where('held_micros', '<>', 0);
  if (subs.length) q = q.where('job_id', 'not in', subs.map(([k]) => Number(k)));
  await q.execute();
}

/**
 * Of `jobIds` (jobs the resume rule granted a resume, budget-resume.ts
 * listResumableBudgetPausedJobs), the ones still paused for budget (endReason `budget`) whose
 * refused call still fits, ascending id: each checked against every budget on its path with
 * what the holders hold ({@link heldByHolders}) and the needs of the ones before it counted as
 * spent. Read in the resuming transaction after {@link lockTree}: the rule's reads and the
 * resume are not one transaction, and another job's call may have spent the room between them
 * (the resumed job would only be refused and paused again). Reads only.
 */
export async function stillFitting(trx: Db, rootId: number, jobIds: readonly number[]): Promise<number[]> {
  if (!jobIds.length) return [];
  const rows = await trx
    .selectFrom('jobs')
    .select(['id', 'root_id', 'error', 'paused_need_micros'])
    .where('root_id', '=', rootId)
    .where('status', '=', 'paused')
    .where('end_reason', '=', 'budget')
    .where('id', 'in', [...jobIds])
    .orderBy('id')
    .execute();
  // as the rule counts them: a holder whose call is admitted but not recorded yet too
  const held = await heldByHolders(trx, rootId, true);
  const out: number[] = [];
  for (const j of rows) {
    const path = await pathBudgets(trx, rootId, num(j.id));
    const need = Math.max(1, pausedNeedMicros(j) ?? 1);
    if (!mayResumeForBudget(true, withHolds(path, held), need)) continue;
    hold(held, path, need);
    out.push(num(j.id));
  }
  return out;
}

/**
 * {@link syncBudgetHolds} of tree `rootId` as its own transaction (tree lock first), when the
 * held room on its rows differs from what its holders hold (read first, without a write: a
 * periodic check of a tree that holds the right amount writes nothing).
 * @returns true when the rows were written again (they held the wrong amount).
 * @throws Error when rootId is not an integer >= 1.
 */
export async function syncTreeHolds(c: StoreCtx, rootId: number): Promise<boolean> {
  assertInt('rootId', rootId, 1);
  if (await holdsMatch(c.db, rootId)) return false;
  await c.db.transaction().execute(async (trx) => {
    await lockTree(trx, rootId);
    await syncBudgetHolds(trx, rootId);
  });
  return true;
}

/** Whether tree `rootId`'s budget rows hold what its holders hold ({@link heldByHolders}). Reads only. */
async function holdsMatch(db: Db, rootId: number): Promise<boolean> {
  const holds = await heldByHolders(db, rootId);
  const tree = await db.selectFrom('tree_budgets').select('held_micros').where('root_id', '=', rootId).executeTakeFirst();
  if (tree && num(tree.held_micros) !== (holds.get('tree') ?? 0)) return false;
  const subs = await db.selectFrom('job_budgets').select(['job_id', 'held_micros']).where('root_id', '=', rootId).execute();
  for (const r of subs) if (num(r.held_micros) !== (holds.get(String(num(r.job_id))) ?? 0)) return false;
  // a sub-limit holding room without a row yet
  return [...holds.keys()].every((k) => k === 'tree' || subs.some((r) => String(num(r.job_id)) === k));
}

/**
 * The trees whose budgets wait on something (the periodic check of server/budget-sweep.ts): a
 * row holding room (`held_micros` > 0 on the tree's or a sub-limit's row), or a job paused for
 * budget. Root ids above `after`, ascending, at most `limit` (a caller going through them all
 * passes the last it got as `after`). Reads only.
 */
export async function listBudgetWaitingTrees(c: StoreCtx, limit: number, after = 0): Promise<number[]> {
  assertInt('limit', limit, 1);
  assertInt('after', after, 0);
  const held = await c.db.selectFrom('tree_budgets').select('root_id').where('held_micros', '>', 0).where('root_id', '>', after).orderBy('root_id').limit(limit).execute();
  const subs = await c.db.selectFrom('job_budgets').select('root_id').where('held_micros', '>', 0).where('root_id', '>', after).orderBy('root_id').limit(limit).execute();
  const paused = await c.db.selectFrom('jobs').select('root_id').distinct().where('status', '=', 'paused').where('end_reason', '=', 'budget').where('root_id', '>', after).orderBy('root_id').limit(limit).execute();
  const ids = new Set([...held, ...subs, ...paused].map((r) => num(r.root_id)));
  return [...ids].sort((a, b) => a - b).slice(0, limit);
}

/**
 * Ends the hold of a job a top-up resumed (see {@link resumedNeedHolds}) once its first call
 * since is recorded (the budget rows stopped holding it when the call was admitted,
 * {@link endHoldAtReservation}; the resume rule counted it until now): clears its
 * `paused_need_micros` while it is `assigned` or `running` (a job paused again keeps the need of
 * its new pause), and writes the held room of the tree's budgets again, one transaction.
 * @returns its tree's root id when a hold ended, else null (none held, or ended already).
 * @throws Error when jobId is not an integer >= 1.
 */
export async function endBudgetResumeHold(c: StoreCtx, jobId: number): Promise<number | null> {
  assertInt('jobId', jobId, 1);
  // nothing to end (a read, no lock): the common case once the hold has ended
  if (!(await c.db.selectFrom('jobs').select('id').where('id', '=', jobId).where('paused_need_micros', 'is not', null).executeTakeFirst())) return null;
  // the budgets' held room is written again in the same transaction, the tree's lock first
  return inJobTreeLock(c, jobId, async (trx, rootId) => {
    const row = await trx
      .updateTable('jobs')
      .set({ paused_need_micros: null })
      .where('id', '=', jobId)
      .where('status', 'in', ['assigned', 'running'])
      .where('paused_need_micros', 'is not', null)
      .returning('id')
      .executeTakeFirst();
    if (!row) return null;
    await syncBudgetHolds(trx, rootId);
    return rootId;
  });
}

/**
 * Holder `jobId`'s call is admitted, in the reserving transaction `trx` (after {@link lockTree}
 * and the reservation): its attempt is marked (`hold_admitted_attempt`, 0028) and the tree's held
 * room written again without its hold. From here the call's reservation keeps its room against
 * other calls, so the room is not counted twice (held, and reserved by the call) while the call
 * is in flight: a sibling's call that fits beside the reservation is served. The resume rule,
 * which does not count calls in flight, goes on counting the job's need until the call is
 * recorded ({@link endBudgetResumeHold}; budget-resume.ts resumedNeedHolds): it does not resume a
 * sibling into the room the call in flight may yet spend. A call that fails upstream gives its
 * reservation back; the job's next call is reserved as any job's. Run it only when the holder's
 * own hold was > 0 ({@link ownHold}).
 */
export async function endHoldAtReservation(trx: Db, rootId: number, jobId: number): Promise<void> {
  const row = await trx
    .updateTable('jobs')
    .set((eb) => ({ hold_admitted_attempt: eb.ref('attempt') }))
    .where('id', '=', jobId)
    .where('status', 'in', ['assigned', 'running'])
    .where('paused_need_micros', 'is not', null)
    .returning('id')
    .executeTakeFirst();
  if (row) await syncBudgetHolds(trx, rootId);
}

/**
 * Lets lapse the holds of tree `rootId`'s resumed jobs that have not started: queued, with a
 * need, resumed (`resumed_at`, 0028) at or before `resumedBefore` (ms). Each one's need is
 * cleared — it stays queued, and its next call is reserved as any job's — and the held room
 * written again, one transaction with the tree's lock first. A resumed job that cannot start
 * (its session's runner offline or on hold: a resume is pinned to it) would otherwise keep its
 * siblings out of the room for as long as it waits (fresh tester). Jobs resumed before 0028
 * (no `resumed_at`) are left.
 * @returns the ids whose hold lapsed, ascending.
 * @throws Error when rootId is not an integer >= 1 or resumedBefore one >= 0.
 */
export async function lapseBudgetHolds(c: StoreCtx, rootId: number, resumedBefore: number): Promise<number[]> {
  assertInt('rootId', rootId, 1);
  assertInt('resumedBefore', resumedBefore, 0);
  const stale = (db: Db) =>
    db.selectFrom('jobs').select('id').where('root_id', '=', rootId).where('status', '=', 'queued').where('paused_need_micros', 'is not', null).where('resumed_at', '<=', resumedBefore);
  // nothing lapses (a read, no lock): the common case at every sweep
  if (!(await stale(c.db).executeTakeFirst())) return [];
  const ids = await c.db.transaction().execute(async (trx) => {
    await lockTree(trx, rootId);
    const rows = await trx
      .updateTable('jobs')
      .set({ paused_need_micros: null, paused_need_call: null })
      .where('id', 'in', stale(trx))
      .returning('id')
      .execute();
    if (rows.length) await syncBudgetHolds(trx, rootId);
    return rows.map((r) => num(r.id));
  });
  return ids.sort((a, b) => a - b);
}

/**
 * The part of the held room that is job `jobId`'s own, µ$: its pause's need when it is a holder
 * (see the top of this file), on every budget of its path; else 0. A holder's calls are not
 * kept out by its own hold. Read in the reserving transaction after {@link lockTree}. Reads only.
 */
export async function ownHold(trx: Db, jobId: number): Promise<number> {
  const [h] = await listHolders(trx, { jobId });
  return h?.heldMicros ?? 0;
}
