import { sql, type UpdateObject } from 'kysely';
import { toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { Database } from './schema.js';
import type { JobRow } from './types.js';

/**
 * An assigned job its runner never started (the runner stopped reporting it, or went silent)
 * goes back to the queue without using a retry: it is not the job's fault. At most this many
 * times (counted in `jobs.unstarted_requeues`, 0023): the next time it fails instead, so a
 * runner that takes jobs and never starts them cannot bounce one between the queue and itself
 * for ever.
 */
export const MAX_UNSTARTED_REQUEUES = 3;

/** The end reason of a job failed that way. */
export const RUNNER_NEVER_STARTED = 'runner_never_started';

/** The `error` of a job failed that way (the status event beside it names the runner and why). */
export const NEVER_STARTED_ERROR =
  `assigned ${MAX_UNSTARTED_REQUEUES + 1} times and never started (back in the queue ${MAX_UNSTARTED_REQUEUES} times without using a retry): ` +
  'failed, so that it does not go round for ever; the runners’ logs say why they did not start it';

/**
 * The columns an unstarted `assigned` job gets, for a conditional UPDATE on `assigned` rows
 * (both engines; every CASE reads the row as it was): under the cap, `queued` with the count + 1
 * and assignment, start and token cleared; at the cap, `failed` (endReason
 * {@link RUNNER_NEVER_STARTED}, error {@link NEVER_STARTED_ERROR}, finishedAt = `now`, token
 * cleared). `runner_id` is not set here: the caller clears it for the queued ones.
 */
export function unstartedSet(now: number): UpdateObject<Database, 'jobs'> {
  const capped = sql<boolean>`unstarted_requeues >= ${MAX_UNSTARTED_REQUEUES}`;
  return {
    status: sql<string>`case when ${capped} then 'failed' else 'queued' end`,
    unstarted_requeues: sql<number>`case when ${capped} then unstarted_requeues else unstarted_requeues + 1 end`,
    end_reason: sql<string | null>`case when ${capped} then ${RUNNER_NEVER_STARTED} else end_reason end`,
    error: sql<string | null>`case when ${capped} then ${NEVER_STARTED_ERROR} else error end`,
    finished_at: sql<number | null>`case when ${capped} then ${now} else finished_at end`,
    assigned_at: sql<number | null>`case when ${capped} then assigned_at else null end`,
    started_at: null,
    token_hash: null,
  };
}

/**
 * Job `jobId`, `assigned` at `attempt` and never started by its runner (hub-reconcile.ts: not
 * reported for the heartbeat timeout), goes back to `queued` with no retry used (runner,
 * assignment and token cleared), or fails once it has gone back that way
 * {@link MAX_UNSTARTED_REQUEUES} times ({@link unstartedSet}): one conditional UPDATE.
 * @returns the job as it now is (`queued` or `failed`), or null when it is no longer `assigned`
 *   at `attempt` (nothing changed).
 */
export async function requeueUnstartedJob(c: StoreCtx, jobId: number, attempt: number, now: number): Promise<JobRow | null> {
  assertInt('jobId', jobId, 1);
  assertInt('attempt', attempt, 0);
  assertInt('now', now, 0);
  const row = await c.db
    .updateTable('jobs')
    .set({ ...unstartedSet(now), runner_id: sql<number | null>`case when unstarted_requeues >= ${MAX_UNSTARTED_REQUEUES} then runner_id else null end` })
    .where('id', '=', jobId)
    .where('attempt', '=', attempt)
    .where('status', '=', 'assigned')
    .returningAll()
    .executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}
