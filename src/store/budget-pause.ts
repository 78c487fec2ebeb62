import type { ExpressionBuilder, Transaction, UpdateQueryBuilder, UpdateResult } from 'kysely';
import { toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { BUDGET_RESUME_PENDING, budgetPausedMayResume, refusedCallMicros } from './budget-resume.js';
import { inJobTreeLock, lockTree, stillFitting, syncBudgetHolds } from './budget-holds.js';
import type { JobRow, NeedCall } from './types.js';
import type { Database } from './schema.js';

/**
 * A job paused for budget and resumed (issue 3): the pause, the resume of the jobs a top-up gave
 * room, a resume deferred until the paused attempt's process has exited, and that exit. Each is
 * one transaction that takes the tree's budget lock first and writes the held room again
 * (budget-holds.ts). The budgets themselves are budgets.ts's.
 */

export { BUDGET_RESUME_PENDING };

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
const resumeColumns = (now: number) => (eb: ExpressionBuilder<Database, 'jobs'>) =>
  ({
    status: 'queued',
    // the start of the hold it keeps from here (budget-holds.ts lapseBudgetHolds)
    resumed_at: now,
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
    // kept: the resumed job holds the room for this call until its call is admitted (budget-resume.ts resumedNeedHolds, budget-holds.ts)
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
  // the resumed jobs hold the room of their refused calls (budget-holds.ts)
  return grantResumes(c, rootId, jobIds, (trx) => trx.updateTable('jobs').set(resumeColumns(now)).where('root_id', '=', rootId).where('status', '=', 'paused').where('end_reason', '=', 'budget'));
}


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
  // a granted resume holds the room of its refused call (budget-holds.ts)
  return grantResumes(c, rootId, jobIds, (trx) =>
    trx
      .updateTable('jobs')
      .set({ end_reason: BUDGET_RESUME_PENDING })
      .where('root_id', '=', rootId)
      .where('status', '=', 'paused')
      .where('end_reason', '=', 'budget')
      .where('finished_at', 'is', null)
      .where('runner_id', 'is not', null),
  );
}

/**
 * The transaction of a granted resume ({@link resumeBudgetPausedJobs}, {@link deferHeldBudgetResumes}):
 * the tree's lock first, then of `jobIds` only those whose call still fits (budget-holds.ts
 * stillFitting: the rule read the room before this transaction; without `jobIds`, every job
 * `update` matches), `update`'s rows changed, and the held room written again. Rows id ascending.
 */
async function grantResumes(c: StoreCtx, rootId: number, jobIds: readonly number[] | undefined, update: (trx: Transaction<Database>) => UpdateQueryBuilder<Database, 'jobs', 'jobs', UpdateResult>): Promise<JobRow[]> {
  if (jobIds && !jobIds.length) return [];
  const rows = await c.db.transaction().execute(async (trx) => {
    await lockTree(trx, rootId);
    const ids = jobIds ? await stillFitting(trx, rootId, jobIds) : undefined;
    if (ids && !ids.length) return [];
    let q = update(trx);
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
      .set(resumeColumns(now))
      .where('id', '=', jobId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await syncBudgetHolds(trx, rootId);
    return toJobRow(c.codec, resumed);
  });
}
