import type { Kysely, Transaction } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { subLimitChain } from './job-budgets.js';
import type { Database } from './schema.js';
import { refusedCallMicros } from '../core/budget-message.js';

// The worst case of the call whose refusal paused a job, from its pause reason (core/budget-message.ts).
export { refusedCallMicros };

/**
 * THE rule deciding which budget-paused jobs resume (the only one: a top-up of the tree or of
 * a sub-limit, server/budget-pause.ts budgetResumer, and a deferred resume when the paused
 * attempt's process has exited, budget-pause.ts endPausedAttempt; and the call a resumed job was
 * resumed for, once recorded, server/budget-pause.ts resumeHoldEnder). A paused job resumes when
 * 1. the budget that was raised is on its path (`raised` is the tree, which is on every job's
 *    path, or a sub-limited job that is the job itself or one of its ancestors), and
 * 2. every budget on its path — the tree's and each sub-limit of the job and its ancestors —
 *    has room for the call that was refused: `limit - spent >= need`, `need` the refused call's
 *    worst case as the pause stored it (`jobs.paused_need_micros`, 0024); for a job paused
 *    before that column existed (null), read from its pause reason ({@link refusedCallMicros});
 *    1 µ$ when neither says. Reservations of calls in flight are not counted: the gateway pauses a job only
 *    when a call does not fit even without them (gateway/budget-wait.ts), so a resumed call
 *    kept out only by them waits for them instead of pausing again.
 * A resumed job whose next call cannot fit would only be refused again, pause again and burn an
 * attempt (issue: a top-up of a sibling's sub-limit resumed every paused job of the tree).
 * Jobs resume together only when they fit together: taken in ascending id, each resumed job's
 * need is held against every budget on its path before the next is checked (as is the need of a
 * job whose resume was already granted and waits for its process to exit, `budget_resume`), so
 * a top-up with room for one of two paused siblings resumes one (tester finding: it resumed
 * both, and the second was refused and paused again at once). A job an earlier top-up resumed
 * holds its need the same way until its resumed attempt's first call is recorded
 * ({@link resumedNeedHolds}): a second top-up of 1 µ$ resumed a sibling into the room the first
 * had given a job that had not called yet (tester finding). When that call is recorded the
 * hold ends and the rule runs again for the tree (the room it leaves may fit a sibling). The
 * same holds are kept on the budget rows (`held_micros`, budget-holds.ts), so the gateway's
 * reservations of the other jobs count them too: a running sibling cannot spend the room
 * either.
 * Money is integer micro-dollars.
 */

/**
 * endReason of a budget-paused job whose tree was topped up while its stopped attempt's
 * process had not exited yet (server/paused-exit.ts): it resumes when the runner reports that
 * exit (budget-pause.ts endPausedAttempt), never before, so one job never runs two processes at once.
 */
export const BUDGET_RESUME_PENDING = 'budget_resume';

/** The budget a top-up raised: the tree's, or the sub-limit of child job `jobId`. */
export type BudgetRaised = 'tree' | { jobId: number };

/** One budget on a job's path: the tree's (`jobId` absent) or a sub-limit's. µ$. */
export interface PathBudget {
  jobId?: number;
  limitMicros: number;
  spentMicros: number;
}

/**
 * The rule (see the top of this file) for one paused job: `raisedOnPath` whether the raised
 * budget is on its path, `path` every budget on its path (tree and sub-limits), `needMicros`
 * the refused call's worst case (null: unknown, 1 µ$ is needed). True when it may resume.
 */
export function mayResumeForBudget(raisedOnPath: boolean, path: readonly PathBudget[], needMicros: number | null): boolean {
  const need = Math.max(1, needMicros ?? 1);
  return raisedOnPath && path.every((b) => b.limitMicros - b.spentMicros >= need);
}

type Db = Kysely<Database> | Transaction<Database>;

/**
 * The budgets on job `jobId`'s path (tree `rootId`'s first, then each sub-limit, ascending job
 * id) as they are now. A budget whose row was not created yet (nothing reserved against it)
 * counts at its job's `budget_micros` with nothing spent.
 */
export async function pathBudgets(db: Db, rootId: number, jobId: number): Promise<PathBudget[]> {
  const tree = await db.selectFrom('tree_budgets').select(['limit_micros', 'spent_micros']).where('root_id', '=', rootId).executeTakeFirst();
  const root = tree ? null : await db.selectFrom('jobs').select('budget_micros').where('id', '=', rootId).executeTakeFirst();
  const out: PathBudget[] = [tree ? { limitMicros: num(tree.limit_micros), spentMicros: num(tree.spent_micros) } : { limitMicros: num(root?.budget_micros ?? 0), spentMicros: 0 }];
  const chain = await subLimitChain(db, jobId);
  const rows = chain.length ? await db.selectFrom('job_budgets').select(['job_id', 'limit_micros', 'spent_micros']).where('job_id', 'in', chain.map((j) => j.id)).execute() : [];
  for (const j of chain) {
    const r = rows.find((x) => num(x.job_id) === j.id);
    out.push({ jobId: j.id, limitMicros: r ? num(r.limit_micros) : j.budgetMicros, spentMicros: r ? num(r.spent_micros) : 0 });
  }
  return out;
}

/** A budget-paused job as the rule reads it: its row's id, root, pause reason and stored need (µ$, null/absent: not stored). */
export interface PausedJobNeed {
  id: number;
  root_id: number | string;
  error: string | null;
  paused_need_micros?: number | string | null;
}

/**
 * The refused call's worst case, µ$, of a budget-paused job: the stored `paused_need_micros`;
 * when null (paused before 0024), read from its pause reason ({@link refusedCallMicros}); null
 * when neither says.
 */
export function pausedNeedMicros(job: PausedJobNeed): number | null {
  return job.paused_need_micros !== null && job.paused_need_micros !== undefined ? num(job.paused_need_micros) : refusedCallMicros(job.error);
}

/** µ$ held per budget on the way to a resume: key `tree`, or a sub-limited job's id as text. */
export type BudgetHolds = Map<string, number>;

/** The key of `b` in {@link BudgetHolds}. */
export const holdKey = (b: { jobId?: number }): string => (b.jobId === undefined ? 'tree' : String(b.jobId));

/** Adds `need` µ$ to every budget of `path` in `holds`. */
export function hold(holds: BudgetHolds, path: readonly PathBudget[], need: number): void {
  for (const b of path) holds.set(holdKey(b), (holds.get(holdKey(b)) ?? 0) + need);
}

/** `path` with what `holds` holds counted as spent. */
export function withHolds<T extends PathBudget>(path: readonly T[], holds: BudgetHolds): T[] {
  return path.map((b) => ({ ...b, spentMicros: b.spentMicros + (holds.get(holdKey(b)) ?? 0) }));
}

/**
 * The needs (µ$) held against tree `rootId`'s budgets by jobs a top-up resumed that have not
 * made their first call since: status `queued` (the resumed attempt not claimed yet), or
 * `assigned`/`running` with no ledger row for its attempt, with the need their pause stored
 * (`paused_need_micros`, kept by the resume for this), each against every budget on its path.
 * Such a job's call is the one the top-up made room for; until it is recorded (its reservation
 * does not count: calls in flight are left out of the rule) the room is the job's. `except`: a
 * job left out (the one being checked). Reads only.
 */
export async function resumedNeedHolds(db: Db, rootId: number, except?: number): Promise<BudgetHolds> {
  const rows = await db
    .selectFrom('jobs')
    .select(['id', 'paused_need_micros'])
    .where('root_id', '=', rootId)
    .where('paused_need_micros', 'is not', null)
    .where((eb) =>
      eb.or([
        eb('status', '=', 'queued'),
        eb.and([
          eb('status', 'in', ['assigned', 'running']),
          eb.not(eb.exists(eb.selectFrom('model_calls').select('model_calls.id').whereRef('model_calls.job_id', '=', 'jobs.id').whereRef('model_calls.attempt', '=', 'jobs.attempt'))),
        ]),
      ]),
    )
    .orderBy('id')
    .execute();
  const holds: BudgetHolds = new Map();
  for (const r of rows) {
    const id = num(r.id);
    if (id === except) continue;
    hold(holds, await pathBudgets(db, rootId, id), Math.max(1, num(r.paused_need_micros!)));
  }
  return holds;
}

/**
 * What stands before paused job `jobId` when a top-up of tree `rootId` is shared out (the
 * budget view's `resumeNeeds`, server/budget-resume-needs.ts): the needs held by resumed jobs
 * that have not called yet ({@link resumedNeedHolds}), by resumes waiting for their process to
 * exit (`budget_resume`), and by the jobs paused for budget with a lower id, which the rule
 * takes first — each against every budget on its path, unless a budget off job `jobId`'s path
 * keeps it out (no top-up of `jobId`'s budgets resumes it). So "a top-up of at least X resumes it"
 * holds for a job that is not first in line (fresh-tester finding: job 3 was told the figure
 * job 2's resume took). With `pausedOnly`, only the last: what the budget rows do not hold
 * already (the first two are their `held_micros`, store/budget-holds.ts). Reads only.
 */
export async function holdsAhead(db: Db, rootId: number, jobId: number, pausedOnly = false): Promise<BudgetHolds> {
  const holds = pausedOnly ? new Map<string, number>() : await resumedNeedHolds(db, rootId, jobId);
  // the budgets a top-up for this job raises: only its own path's
  const mine = new Set((await pathBudgets(db, rootId, jobId)).map(holdKey));
  for (const j of await pausedRows(db, rootId, ['budget', BUDGET_RESUME_PENDING])) {
    const id = num(j.id);
    if (id === jobId || (j.end_reason === 'budget' && id > jobId) || (pausedOnly && j.end_reason !== 'budget')) continue;
    const path = await pathBudgets(db, rootId, id);
    const need = Math.max(1, pausedNeedMicros(j) ?? 1);
    // a paused job ahead kept out by a budget off this job's path (its own sub-limit, short)
    // takes nothing of a top-up of this job's budgets: no such top-up resumes it (fresh tester:
    // the advice counted its whole need, and following it overpaid by that much)
    if (j.end_reason === 'budget' && !mayResumeForBudget(true, withHolds(path, holds).filter((b) => !mine.has(holdKey(b))), need)) continue;
    hold(holds, path, need);
  }
  return holds;
}

/**
 * Whether paused job `job` may resume after `raised` was raised ({@link mayResumeForBudget}
 * on its path as it is in `db`, less the needs other resumed jobs hold, {@link resumedNeedHolds},
 * for {@link pausedNeedMicros}); `raised` null: no raise is required (the resume was already
 * granted by a top-up and is only being carried out: endPausedAttempt).
 */
export async function budgetPausedMayResume(db: Db, job: PausedJobNeed, raised: BudgetRaised | null): Promise<boolean> {
  const path = await pathBudgets(db, num(job.root_id), job.id);
  const onPath = raised === null || raised === 'tree' || path.some((b) => b.jobId === raised.jobId);
  return mayResumeForBudget(onPath, withHolds(path, await resumedNeedHolds(db, num(job.root_id), job.id)), pausedNeedMicros(job));
}

/**
 * The jobs of tree `rootId` paused for budget (endReason `budget`) that may resume now that
 * `raised` was raised ({@link mayResumeForBudget}), ascending ids, each checked with the needs
 * of the ones before it (and of granted resumes waiting for their exit, endReason
 * `budget_resume`) held against the budgets on its path: together they fit. Reads only.
 * With `knownNeedOnly` (the server's periodic check, server/budget-sweep.ts), a job whose need
 * is not known (1 µ$ counts for it) is left out: dust left in a tree would resume it only for
 * it to be refused and paused again, every check.
 * @throws Error when rootId is not an integer >= 1 or raised.jobId is not.
 */
export async function listResumableBudgetPausedJobs(c: StoreCtx, rootId: number, raised: BudgetRaised, knownNeedOnly = false): Promise<number[]> {
  assertInt('rootId', rootId, 1);
  if (raised !== 'tree') assertInt('raised.jobId', raised.jobId, 1);
  const paused = await pausedRows(c.db, rootId, ['budget', BUDGET_RESUME_PENDING]);
  // µ$ held per budget by the resumes granted so far: jobs resumed that have not called yet,
  // resumes waiting for their process to exit, and each one this top-up grants below
  const held = await resumedNeedHolds(c.db, rootId);
  const out: number[] = [];
  const pending = paused.filter((j) => j.end_reason === BUDGET_RESUME_PENDING);
  for (const j of pending) hold(held, await pathBudgets(c.db, rootId, num(j.id)), Math.max(1, pausedNeedMicros(j) ?? 1));
  for (const j of paused) {
    if (j.end_reason !== 'budget' || (knownNeedOnly && pausedNeedMicros(j) === null)) continue;
    const id = num(j.id);
    const path = await pathBudgets(c.db, rootId, id);
    const onPath = raised === 'tree' || path.some((b) => b.jobId === raised.jobId);
    const need = Math.max(1, pausedNeedMicros(j) ?? 1);
    if (!mayResumeForBudget(onPath, withHolds(path, held), need)) continue;
    hold(held, path, need);
    out.push(id);
  }
  return out;
}

/** The paused jobs of tree `rootId` whose endReason is one of `reasons`, as the rule reads them, ids ascending (one query, on the jobs_root index). */
function pausedRows(db: Db, rootId: number, reasons: string[]) {
  return db
    .selectFrom('jobs')
    .select(['id', 'root_id', 'error', 'paused_need_micros', 'end_reason'])
    .where('root_id', '=', rootId)
    .where('status', '=', 'paused')
    .where('end_reason', 'in', reasons)
    .orderBy('id')
    .execute();
}

/** The jobs of tree `rootId` paused for budget (endReason `budget`), ids ascending: the budget view's `pausedJobs`. Reads only. @throws Error when rootId is not an integer >= 1. */
export async function listBudgetPausedJobs(c: StoreCtx, rootId: number): Promise<number[]> {
  assertInt('rootId', rootId, 1);
  return (await pausedRows(c.db, rootId, ['budget'])).map((j) => num(j.id));
}
