import { sql } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { ModelCallActivity } from './types.js';

/**
 * Model-call activity per job attempt (issue 4: the idle limit is "no output AND no model call
 * for N seconds"). The gateway notes each call's start and end here, whichever replica serves
 * it; the runner hub reads it for the jobs a runner reports in its heartbeats. Times are epoch
 * ms on the server's clock.
 */

/**
 * Notes that a model call of (jobId, attempt) started (`start`: in_flight + 1) or ended
 * (`end`: in_flight − 1, never below 0), at `now`. One upsert: concurrent calls of the same
 * attempt from several gateway replicas add up exactly.
 * @throws Error naming the field when jobId/attempt/now are not integers (jobId ≥ 1, others ≥ 0)
 *   or `phase` is neither `start` nor `end`.
 */
export async function noteModelCall(c: StoreCtx, jobId: number, attempt: number, phase: 'start' | 'end', now: number): Promise<void> {
  assertInt('jobId', jobId, 1);
  assertInt('attempt', attempt, 0);
  assertInt('now', now, 0);
  if (phase !== 'start' && phase !== 'end') throw new Error(`phase must be "start" or "end", got ${JSON.stringify(phase)}`);
  const first = phase === 'start' ? 1 : 0;
  const next =
    phase === 'start'
      ? sql<number>`model_call_activity.in_flight + 1`
      : sql<number>`case when model_call_activity.in_flight > 0 then model_call_activity.in_flight - 1 else 0 end`;
  await c.db
    .insertInto('model_call_activity')
    .values({ job_id: jobId, attempt, in_flight: first, last_at: now })
    .onConflict((oc) =>
      oc.columns(['job_id', 'attempt']).doUpdateSet({
        in_flight: next,
        last_at: sql<number>`case when model_call_activity.last_at > ${now} then model_call_activity.last_at else ${now} end`,
      }),
    )
    .execute();
}

/**
 * Activity of the given attempts (those without any model call are left out), in no
 * particular order. At most 1000 pairs per call.
 * @throws Error when a pair is not two positive integers or there are more than 1000.
 */
export async function modelCallActivity(c: StoreCtx, attempts: readonly { jobId: number; attempt: number }[]): Promise<ModelCallActivity[]> {
  if (attempts.length === 0) return [];
  if (attempts.length > 1000) throw new Error(`at most 1000 job attempts per call, got ${attempts.length}`);
  for (const a of attempts) {
    assertInt('jobId', a.jobId, 1);
    assertInt('attempt', a.attempt, 0);
  }
  const wanted = new Set(attempts.map((a) => `${a.jobId}:${a.attempt}`));
  const rows = await c.db
    .selectFrom('model_call_activity')
    .select(['job_id', 'attempt', 'in_flight', 'last_at'])
    .where(
      'job_id',
      'in',
      [...new Set(attempts.map((a) => a.jobId))],
    )
    .execute();
  return rows
    .map((r) => ({ jobId: num(r.job_id), attempt: num(r.attempt), inFlight: num(r.in_flight), lastAt: num(r.last_at) }))
    .filter((r) => wanted.has(`${r.jobId}:${r.attempt}`));
}
